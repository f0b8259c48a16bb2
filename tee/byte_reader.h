// A bounds-checked reader over untrusted bytes (SPDM messages, NVIDIA opaque data, TDX quotes, the
// ranks' input records): every read names the field it reads, so a short or damaged message is refused
// with one line saying which field ran past the end, never read beyond the buffer.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::tee {

class ByteReader {
 public:
  // Called with the offset of a read that runs past the end, and expected to throw: for a format whose
  // short message is not the user's input but, say, a peer's (an IntegrityError in its own words).
  using OnTruncated = std::function<void(std::size_t at)>;

  // `what` names the message in errors: "SPDM MEASUREMENTS response". A read past the end is an
  // InputError naming `what`, the field and the offset, unless `on_truncated` throws its own first.
  ByteReader(ByteView bytes, std::string what, OnTruncated on_truncated = {})
      : bytes_(bytes), what_(std::move(what)), on_truncated_(std::move(on_truncated)) {}

  ByteView take(std::size_t n, const char* field) {
    if (n > remaining()) {
      if (on_truncated_) on_truncated_(pos_);
      throw InputError(what_ + ": truncated at " + field + " (needs " + std::to_string(n) +
                       " bytes at offset " + std::to_string(pos_) + ", " + std::to_string(remaining()) +
                       " left)");
    }
    const ByteView out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  // Little-endian, as the evidence formats are.
  std::uint8_t u8(const char* field) { return take(1, field)[0]; }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(load_le(take(2, field))); }
  std::uint32_t u24(const char* field) { return static_cast<std::uint32_t>(load_le(take(3, field))); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(load_le(take(4, field))); }
  // Big-endian, as our own records are (tee/bytes.h: readable in a hex dump).
  std::uint16_t be16(const char* field) {
    const ByteView b = take(2, field);
    return static_cast<std::uint16_t>((b[0] << 8) | b[1]);
  }

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }

 private:
  ByteView bytes_;
  std::string what_;
  OnTruncated on_truncated_;
  std::size_t pos_ = 0;
};

}  // namespace tt::tee
