// A bounds-checked reader over untrusted little-endian bytes (SPDM messages, NVIDIA opaque data, TDX
// quotes): every
// read names the field it reads, so a short or damaged message is refused with one line saying which
// field ran past the end, never read beyond the buffer.
#pragma once
#include <cstdint>
#include <string>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::tee::evidence {

class ByteReader {
 public:
  // `what` names the message in errors: "SPDM MEASUREMENTS response".
  ByteReader(ByteView bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  ByteView take(std::size_t n, const char* field) {
    if (n > remaining()) {
      throw InputError(what_ + ": truncated at " + field + " (needs " + std::to_string(n) +
                       " bytes at offset " + std::to_string(pos_) + ", " + std::to_string(remaining()) +
                       " left)");
    }
    const ByteView out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  std::uint8_t u8(const char* field) { return take(1, field)[0]; }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(le(take(2, field))); }
  std::uint32_t u24(const char* field) { return static_cast<std::uint32_t>(le(take(3, field))); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(le(take(4, field))); }

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }

  // Little-endian value of up to 8 bytes.
  static std::uint64_t le(ByteView b) {
    std::uint64_t v = 0;
    for (std::size_t i = b.size(); i-- > 0;) v = (v << 8) | b[i];
    return v;
  }

 private:
  ByteView bytes_;
  std::string what_;
  std::size_t pos_ = 0;
};

}  // namespace tt::tee::evidence
