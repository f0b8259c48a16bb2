// Shared helpers for the tee/ tests.
#pragma once
#include "tests/common/temp_dir.h"
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tee/bytes.h"

namespace tt::tee::test {

inline std::vector<std::uint8_t> hex(std::string_view h) {
  return from_hex(h);
}

template <std::size_t N>
std::array<std::uint8_t, N> hex_array(std::string_view h) {
  const auto v = from_hex(h);
  std::array<std::uint8_t, N> a{};
  if (v.size() != N) throw std::invalid_argument("hex_array: wrong length");
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// Bytes 0, 1, 2, ... (mod 251, so chunk boundaries do not line up with the pattern).
inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed = 0) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i + seed) % 251);
  return v;
}

using ::tt::testing::TempDir;  // tests/common/temp_dir.h

}  // namespace tt::tee::test
