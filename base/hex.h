// Hex text as the layers check and print it: whether a field is a digest or id of a given length, and
// the shortened form messages name one by. Bytes to hex (to_hex) are tee/bytes.h's.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace tt {

// Exactly `len` lowercase hex digits: the one spelling our files and records write, so any other is
// a damaged or forged field.
inline bool is_hex(std::string_view s, std::size_t len) {
  return s.size() == len && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The first `keep` characters of `hex` and then `mark` ("3f2a9c1e..."): enough of a digest or id to
// tell two apart in a message. Each message keeps the length and mark it has always printed.
inline std::string short_hex(std::string_view hex, std::size_t keep, std::string_view mark = "...") {
  std::string out(hex.substr(0, keep));
  out += mark;
  return out;
}

}  // namespace tt
