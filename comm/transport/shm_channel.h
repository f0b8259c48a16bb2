// The layout of one shared-memory channel (Note [Shared-memory channels], comm/transport/shm_transport.h) and
// the checks its bytes pass before they are used. The channel lives in memory that any process of
// the host's user can map: like a wire, it is outside every trust boundary, so a counter or header
// that no sender of ours writes is reported (IntegrityError in ShmTransport), never followed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tt::comm {

// A channel's slots (ShmTransport's layout: every ordered pair of ranks on a host has one channel).
struct ShmLayout {
  std::size_t slot_bytes = 64 * 1024;  // the longest message sent inline (a multiple of 64)
  std::size_t slots = 8;               // messages in flight per ordered pair of ranks
  // A longer message's bytes: read by the receiver straight from the sender's memory (Linux's
  // process_vm_readv, where the ranks may; else, and with false, through MPI).
  bool direct_reads = true;
};

}  // namespace tt::comm

namespace tt::comm::shm {

inline constexpr std::size_t kLine = 64;
inline constexpr std::size_t kHeaderBytes = kLine;        // a slot's header line
inline constexpr std::size_t kCountersBytes = 2 * kLine;  // `written` and `read`, a line each
inline constexpr std::size_t kTickets = 64;               // direct reads in flight per channel
inline constexpr std::size_t kTicketsBytes = kTickets * sizeof(std::uint64_t);  // their `done` words
// ... and their `withdrawn` words (Note [Withdrawn sends], shm_transport.cpp), the same size again.
inline constexpr std::size_t kWithdrawnBytes = kTicketsBytes;
// Where a channel's first slot begins: its counters, done words and withdrawn words come first.
inline constexpr std::size_t kSlotsOffset = kCountersBytes + kTicketsBytes + kWithdrawnBytes;
inline constexpr std::int32_t kInline = -1;  // SlotHeader::payload_tag of an inline message
inline constexpr std::int32_t kDirect = -2;  // ... of a long message the receiver reads from the sender
inline constexpr std::int32_t kPayloadTags = 32000;  // payload tags 0 .. kPayloadTags-1 (< MPI's TAG_UB)

struct SlotHeader {
  std::uint64_t bytes;
  std::int32_t tag;
  std::int32_t payload_tag;   // kInline, kDirect, or the tag its MPI message travels under
  std::uint64_t address = 0;  // kDirect: where the bytes are in the sender's memory
  std::uint64_t ticket = 0;   // kDirect: the sender's count of such messages, its `done` word's key
  // kDirect from a shared buffer (Note [Shared buffers], shm_transport.h): its memfd's descriptor in
  // the sender, inode number (0: not from a shared buffer), address and length there.
  std::int32_t buffer_fd = -1;
  std::uint32_t unused = 0;
  std::uint64_t buffer_id = 0;
  std::uint64_t buffer_base = 0;
  std::uint64_t buffer_bytes = 0;
};
static_assert(sizeof(SlotHeader) <= kHeaderBytes);

// What is wrong with a header read from a slot of `slot_bytes` (nullopt: a sender of ours could
// have written it): an inline message longer than the slot, a payload tag out of range, a long
// message short enough to have been inline, a shared buffer named by anything but a direct message
// or that does not hold the message. (A direct message's address is checked by reading it: the
// kernel refuses what the sender has not mapped; a shared buffer's identity by its inode number.)
std::optional<std::string> slot_header_error(const SlotHeader& h, std::size_t slot_bytes);
// What is wrong with a channel's counters as the receiver sees them: `written` behind what it has
// read, or ahead of it by more than the channel's slots.
std::optional<std::string> written_error(std::uint64_t written, std::uint64_t read, std::size_t slots);
// ... and as the sender sees them: the receiver claims to have read messages never written.
std::optional<std::string> read_error(std::uint64_t read, std::uint64_t written);

}  // namespace tt::comm::shm
