// One printed field of a piece of evidence: "  NAME                VALUE", the column every `verify-evidence`
// listing uses (TDX quotes, SEV-SNP reports), so fields line up whatever the evidence.
#pragma once
#include <array>
#include <cstdio>
#include <string>

#include "tee/bytes.h"

namespace tt::tee::evidence {

inline std::string field_line(const char* name, const std::string& value) {
  std::array<char, 32> label{};
  std::snprintf(label.data(), label.size(), "  %-20s", name);
  return std::string(label.data()) + value + "\n";
}

inline std::string hex_line(const char* name, ByteView v) {
  return field_line(name, to_hex(v));
}

}  // namespace tt::tee::evidence
