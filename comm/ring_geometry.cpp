#include "comm/ring_geometry.h"

#include <algorithm>

namespace tt::comm {

RingGeometry::RingGeometry(int rank, int size, std::size_t count, std::size_t segment_bytes,
                           const MessageContext& id, bool forward_wire, std::size_t overhead)
    : rank_(rank), size_(size), count_(count), id_(id), forward_wire_(forward_wire), overhead_(overhead) {
  seg_elems_ = segment_bytes == 0 ? std::max<std::size_t>(max_chunk(), 1)
                                  : std::max<std::size_t>(segment_bytes / sizeof(float), 1);
}

RingHop RingGeometry::scatter_reduce_hop(std::uint32_t s) const {
  const auto p = static_cast<std::uint32_t>(size_);
  const auto r = static_cast<std::uint32_t>(rank_);
  return {MessagePhase::ScatterReduce, s, (r + p - s) % p, (r + 2 * p - s - 1) % p};
}

RingHop RingGeometry::all_gather_hop(std::uint32_t s) const {
  const auto p = static_cast<std::uint32_t>(size_);
  const auto r = static_cast<std::uint32_t>(rank_);
  return {MessagePhase::AllGather, s, (r + 1 + p - s) % p, (r + p - s) % p};
}

RingRange RingGeometry::chunk(std::uint32_t c) const {
  const auto p = static_cast<std::size_t>(size_);
  const std::size_t base = count_ / p;
  const std::size_t rem = count_ % p;
  return {c * base + std::min<std::size_t>(c, rem), base + (c < rem ? 1 : 0)};
}

std::size_t RingGeometry::segments(const RingRange& ch) const {
  return (ch.count + seg_elems_ - 1) / seg_elems_;
}

RingRange RingGeometry::segment(const RingRange& ch, std::size_t k) const {
  const std::size_t begin = k * seg_elems_;
  return {ch.offset + begin, std::min(seg_elems_, ch.count - begin)};
}

// Slots are padded to 64 bytes so every segment's wire bytes start aligned: the GPU AES-GCM takes its
// vectorised path only for 16-byte aligned buffers, and the CPU's AES-NI loads like cache-line starts.
std::size_t RingGeometry::wire_offset(std::size_t k) const {
  constexpr std::size_t kSlotAlign = 64;
  const std::size_t slot = seg_elems_ * sizeof(float) + overhead_;
  return k * ((slot + kSlotAlign - 1) / kSlotAlign * kSlotAlign);
}

MessageContext RingGeometry::context(const RingHop& h, std::uint32_t chunk_index, std::size_t seg, int sender,
                                     int receiver, std::size_t bytes) const {
  MessageContext c = id_;
  c.phase = h.phase;
  c.hop = h.index;
  c.chunk = chunk_index;
  c.segment = static_cast<std::uint32_t>(seg);
  c.length = bytes;
  const int owner = (static_cast<int>(chunk_index) + size_ - 1) % size_;  // holds the finished chunk
  if (forwarding(h)) {
    // One sealed object travels every link unchanged: it belongs to the owner, not to a hop.
    c.hop = 0;
    c.origin = owner;
    c.sender = owner;
    c.receiver = kAnyRank;
  } else {
    c.origin = h.phase == MessagePhase::AllGather ? owner : sender;
    c.sender = sender;
    c.receiver = receiver;
  }
  return c;
}

}  // namespace tt::comm
