#include "comm/allreduce/shard_handover.h"

#include <algorithm>

namespace tt::comm {

namespace {

ElemRange intersect(const ElemRange& a, const ElemRange& b) {
  const std::size_t lo = std::max(a.offset, b.offset);
  const std::size_t hi = std::min(a.offset + a.count, b.offset + b.count);
  return hi > lo ? ElemRange{lo, hi - lo} : ElemRange{lo, 0};
}

// The message side for `part` of ring chunk `chunk` (none when the part is empty).
HopSide side_of(int peer, const ElemRange& part, std::size_t chunk, int origin) {
  if (part.count == 0) return {};
  return {peer, part, static_cast<std::uint32_t>(chunk), origin};
}

}  // namespace

void handover_hops(int rank, int size, std::size_t count, const NaturalOwnership& natural, bool to_ring,
                   std::vector<Hop>& out) {
  const auto ring = [&](int r) { return RingGeometry::owned_chunk(r, size, count); };
  const auto chunk_of = [size](int r) { return static_cast<std::size_t>((r + 1) % size); };
  for (int k = 1; k < size; ++k) {
    const int to = (rank + k) % size;
    const int from = (rank - k + size) % size;
    Hop h;
    h.phase = to_ring ? MessagePhase::ShardHandover : MessagePhase::ShardHandback;
    h.index = static_cast<std::uint32_t>(k);
    // Chunk: the ring chunk the part belongs to (the receiver's on the way over, the sender's back).
    if (to_ring) {
      h.send = side_of(to, intersect(natural(rank), ring(to)), chunk_of(to), rank);
      h.recv = side_of(from, intersect(ring(rank), natural(from)), chunk_of(rank), from);
    } else {
      h.send = side_of(to, intersect(ring(rank), natural(to)), chunk_of(rank), rank);
      h.recv = side_of(from, intersect(natural(rank), ring(from)), chunk_of(from), from);
    }
    if (h.send.active() || h.recv.active()) out.push_back(h);
  }
}

}  // namespace tt::comm
