// The geometry of one ring all-reduce call (docs/design.md §5), shared by the host ring
// (comm/allreduce/ring_allreduce) and the ring on device buffers (comm/cuda/device_ring): how a buffer of
// `count` floats is cut into P chunks, which chunk each hop sends and receives and how its messages
// are labelled (a Hop, run by comm/allreduce/hop_runner.h). One implementation means both rings cut, order
// and label messages identically, so a sealing channel binds the same associated data on the CPU and on the
// GPU. SegmentLayout, how any range is cut into segments and where a segment sits in a wire buffer, is shared
// by every algorithm (the recursive ones too: recursive_allreduce.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/channel.h"

namespace tt::comm {

struct ElemRange {
  std::size_t offset = 0;  // elements
  std::size_t count = 0;
};

// Balanced partition of `count` elements into `parts` blocks: the first (count % parts) blocks get one
// extra element; block b starts at b * (count / parts) + min(b, count % parts).
ElemRange balanced_block(std::size_t count, std::size_t parts, std::size_t b);

// How a range travels: segments of `segment_elems` floats (the last may be shorter), each in a wire
// buffer slot of the segment's bytes plus the channel's overhead, padded to 64 bytes.
class SegmentLayout {
 public:
  SegmentLayout() = default;
  // segment_bytes 0: a range is one message (segments of `whole_elems`, the largest range sent).
  SegmentLayout(std::size_t segment_bytes, std::size_t whole_elems, std::size_t overhead);
  std::size_t segments(const ElemRange& range) const;
  ElemRange segment(const ElemRange& range, std::size_t k) const;
  std::size_t segment_elems() const { return seg_elems_; }  // a full segment (the last may be shorter)
  std::size_t wire_offset(std::size_t k) const;  // byte offset of segment k's slot in a wire buffer
  // Wire scratch for a range of `elems` floats.
  std::size_t wire_bytes(std::size_t elems) const { return wire_offset(segments(ElemRange{0, elems})); }

 private:
  std::size_t seg_elems_ = 1;
  std::size_t overhead_ = 0;
};

// Note [Folded ring]: an emulated run in virtual time may model a ring of P ranks with K of them
// (`train --model-ranks P`, K dividing P): real rank r plays modelled rank r, and the ring of K is cut
// and labelled as the ring of P would be: P chunks, P - 1 hops per phase, rank r sending chunk (r - s)
// mod P at scatter-reduce hop s. Its messages go to the real neighbours (r + 1 and r - 1 mod K), so the
// last rank's message closes the real ring at rank 0 in place of modelled rank K. Each receiver labels
// and sizes what arrives from its real predecessor's modelled position (the chunk that rank sends), so
// sender and receiver agree on every message's context and length: sealed, the tag checks as on any
// ring. Why it equals the full ring: every emulated rank computes for the same modelled time, and a ring
// of P ranks whose node boundaries repeat every K ranks (K a multiple of the GPUs per node) is the same
// ring seen from ranks r and r + K, so rank r's virtual timeline in the fold is its timeline in the full
// ring. Not quite: where a bucket's floats are not a multiple of P, chunks differ by one float, and rank
// 0 receives the size of chunk (K - 1 - s) where the full ring sends it (P - 1 - s); one float of a hop
// (4 bytes) is well under a clock tick at link rate, and the tests bound what is left. The sums are not
// the full ring's (the fold adds chunks the ring of P would not): an emulated run's gradients are
// synthetic, and a fold is refused where they are real. What it saves: the tokens every step seals,
// K * 2(P - 1) per bucket instead of P * 2(P - 1), so P = 1,024 runs on K = 8 or 16 threads. Sharded
// ranks are not alike in their optimizer: Note [Sharded fold] (engine/gradients/shard.h).
struct Hop;

class RingGeometry {
 public:
  RingGeometry() = default;
  // segment_bytes 0: each chunk is one message. forward_wire: all-gather forwards the owner's sealed
  // bytes (only meaningful for a sealing channel). overhead: wire bytes per message beyond the plaintext.
  // modelled: the ring's size when the run folds a larger ring onto its `size` ranks (Note [Folded
  // ring]; 0: `size`, no fold). A fold needs size >= 2 dividing modelled, and no forward_wire.
  RingGeometry(int rank, int size, std::size_t count, std::size_t segment_bytes, bool forward_wire,
               std::size_t overhead, int modelled = 0);

  int rank() const { return rank_; }
  int size() const { return size_; }
  int modelled() const { return model_; }  // the ring's chunks and hops per phase + 1 (== size() unfolded)
  std::size_t max_chunk() const {
    return (count_ + static_cast<std::size_t>(model_) - 1) / static_cast<std::size_t>(model_);
  }

  // Hop s of each phase (s = 0..P-2; P: modelled()). Scatter-reduce sends chunk (r - s) to r + 1, receives (r
  // - s - 1) from r - 1 and adds it in; after P-1 hops rank r owns chunk (r + 1). All-gather sends chunk (r +
  // 1 - s), receives (r - s) and stores it. Sender and receiver label each message from their own ring
  // positions (origin: the sender in scatter-reduce, the chunk's owner in all-gather); nothing comes from the
  // wire. Forward-wire all-gather: one sealed object per chunk (Hop::forwarded).
  Hop scatter_reduce_hop(std::uint32_t s) const;
  Hop all_gather_hop(std::uint32_t s) const;

  // Balanced partition: the first (count % P) chunks get one extra element.
  ElemRange chunk(std::uint32_t c) const;
  // The chunk whose finished sum this rank holds after the scatter-reduce, and sends first in the
  // all-gather: chunk (r + 1). Note [Shard layout].
  ElemRange owned() const { return owned_chunk(rank_, model_, count_); }
  static ElemRange owned_chunk(int rank, int size, std::size_t count);
  const SegmentLayout& layout() const { return layout_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  int model_ = 1;  // modelled(): size_ unless folded
  std::size_t count_ = 0;
  SegmentLayout layout_;
  bool forward_wire_ = false;
};

}  // namespace tt::comm
