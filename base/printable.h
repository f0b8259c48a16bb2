// Text from outside the process (a file's clear header, a name read from a directory, a field of an
// unverified record) as one line a terminal shows as it is: printable ASCII kept, a backslash doubled,
// every other byte — newline, carriage return, escape, any byte from 0x7f up — written as \xNN.
// Printed raw, such text could draw a second line that looks like ours (a forged "manifest sha256 ...
// (pin with --expect-checkpoint)" for a user to copy) or drive the terminal.
#pragma once
#include <array>
#include <string>
#include <string_view>

namespace tt {

inline std::string printable(std::string_view text) {
  static constexpr std::array<char, 17> kHex = {"0123456789abcdef"};
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

}  // namespace tt
