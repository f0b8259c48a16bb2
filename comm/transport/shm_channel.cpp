#include "comm/transport/shm_channel.h"

namespace tt::comm::shm {

std::optional<std::string> slot_header_error(const SlotHeader& h, std::size_t slot_bytes) {
  if (h.payload_tag == kInline) {
    if (h.bytes > slot_bytes)
      return "an inline message of " + std::to_string(h.bytes) + " bytes in a slot of " +
             std::to_string(slot_bytes);
    return std::nullopt;
  }
  if (h.payload_tag != kDirect && (h.payload_tag < 0 || h.payload_tag >= kPayloadTags))
    return "payload tag " + std::to_string(h.payload_tag) + " out of range";
  if (h.bytes <= slot_bytes)
    return "a message of " + std::to_string(h.bytes) + " bytes sent long, which fits a slot of " +
           std::to_string(slot_bytes);
  if (h.buffer_id == 0) return std::nullopt;
  if (h.payload_tag != kDirect || h.buffer_fd < 0)
    return "a shared buffer named by a message that is not read in place (descriptor " +
           std::to_string(h.buffer_fd) + ")";
  // address - base + bytes <= buffer_bytes, written so that nothing overflows.
  if (h.address < h.buffer_base || h.bytes > h.buffer_bytes ||
      h.address - h.buffer_base > h.buffer_bytes - h.bytes)
    return "a message of " + std::to_string(h.bytes) + " bytes at address " + std::to_string(h.address) +
           ", outside the shared buffer of " + std::to_string(h.buffer_bytes) + " bytes at " +
           std::to_string(h.buffer_base);
  return std::nullopt;
}

std::optional<std::string> written_error(std::uint64_t written, std::uint64_t read, std::size_t slots) {
  if (written < read || written - read > slots)
    return "its writer claims " + std::to_string(written) + " messages written, " + std::to_string(read) +
           " read, with " + std::to_string(slots) + " slots";
  return std::nullopt;
}

std::optional<std::string> read_error(std::uint64_t read, std::uint64_t written) {
  if (read > written)
    return "its reader claims " + std::to_string(read) + " messages read of " + std::to_string(written) +
           " written";
  return std::nullopt;
}

}  // namespace tt::comm::shm
