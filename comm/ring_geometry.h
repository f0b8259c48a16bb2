// The geometry of one ring all-reduce call (docs/design.md §5), shared by the host ring
// (comm/ring_allreduce) and the ring on device buffers (comm/cuda/device_ring): how a buffer of
// `count` floats is cut into P chunks and each chunk into segments, which chunk each hop sends and
// receives, where a segment sits in a wire buffer, and the MessageContext of every message. One
// implementation means both rings cut, order and label messages identically, so a sealing channel
// binds the same associated data on the CPU and on the GPU.
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/channel.h"

namespace tt::comm {

struct RingRange {
  std::size_t offset = 0;  // elements
  std::size_t count = 0;
};

struct RingHop {
  MessagePhase phase;
  std::uint32_t index;  // 0..P-2 within the phase
  std::uint32_t send_chunk;
  std::uint32_t recv_chunk;
};

class RingGeometry {
 public:
  RingGeometry() = default;
  // segment_bytes 0: each chunk is one message. forward_wire: all-gather forwards the owner's sealed
  // bytes (only meaningful for a sealing channel). overhead: wire bytes per message beyond the plaintext.
  RingGeometry(int rank, int size, std::size_t count, std::size_t segment_bytes, const MessageContext& id,
               bool forward_wire, std::size_t overhead);

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::size_t max_chunk() const {
    return (count_ + static_cast<std::size_t>(size_) - 1) / static_cast<std::size_t>(size_);
  }

  // Hop s of each phase (s = 0..P-2). Scatter-reduce sends chunk (r - s), receives (r - s - 1); after
  // P-1 hops rank r owns chunk (r + 1). All-gather sends chunk (r + 1 - s), receives (r - s).
  RingHop scatter_reduce_hop(std::uint32_t s) const;
  RingHop all_gather_hop(std::uint32_t s) const;

  // Balanced partition: the first (count % P) chunks get one extra element.
  RingRange chunk(std::uint32_t c) const;
  std::size_t segments(const RingRange& chunk) const;
  RingRange segment(const RingRange& chunk, std::size_t k) const;
  std::size_t segment_elems() const { return seg_elems_; }  // a full segment (the last may be shorter)
  std::size_t wire_offset(std::size_t k) const;  // byte offset of segment k's slot in a wire buffer
  std::size_t wire_bytes() const { return wire_offset(segments(RingRange{0, max_chunk()})); }
  bool forwarding(const RingHop& h) const { return forward_wire_ && h.phase == MessagePhase::AllGather; }
  // Sender and receiver build the context from their own ring positions; nothing comes from the wire.
  MessageContext context(const RingHop& h, std::uint32_t chunk, std::size_t seg, int sender, int receiver,
                         std::size_t bytes) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::size_t count_ = 0;
  std::size_t seg_elems_ = 1;
  MessageContext id_{};
  bool forward_wire_ = false;
  std::size_t overhead_ = 0;
};

}  // namespace tt::comm
