#include "comm/allreduce/ring_geometry.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "comm/allreduce/hop_runner.h"

namespace tt::comm {

ElemRange balanced_block(std::size_t count, std::size_t parts, std::size_t b) {
  const std::size_t base = count / parts;
  const std::size_t rem = count % parts;
  return {b * base + std::min(b, rem), base + (b < rem ? 1 : 0)};
}

SegmentLayout::SegmentLayout(std::size_t segment_bytes, std::size_t whole_elems, std::size_t overhead)
    : seg_elems_(segment_bytes == 0 ? std::max<std::size_t>(whole_elems, 1)
                                    : std::max<std::size_t>(segment_bytes / sizeof(float), 1)),
      overhead_(overhead) {}

std::size_t SegmentLayout::segments(const ElemRange& range) const {
  return (range.count + seg_elems_ - 1) / seg_elems_;
}

ElemRange SegmentLayout::segment(const ElemRange& range, std::size_t k) const {
  const std::size_t begin = k * seg_elems_;
  return {range.offset + begin, std::min(seg_elems_, range.count - begin)};
}

// Slots are padded to 64 bytes so every segment's wire bytes start aligned: the GPU AES-GCM takes its
// vectorised path only for 16-byte aligned buffers, and the CPU's AES-NI loads like cache-line starts.
std::size_t SegmentLayout::wire_offset(std::size_t k) const {
  constexpr std::size_t kSlotAlign = 64;
  const std::size_t slot = seg_elems_ * sizeof(float) + overhead_;
  return k * ((slot + kSlotAlign - 1) / kSlotAlign * kSlotAlign);
}

RingGeometry::RingGeometry(int rank, int size, std::size_t count, std::size_t segment_bytes,
                           bool forward_wire, std::size_t overhead, int modelled)
    : rank_(rank),
      size_(size),
      model_(modelled > 0 ? modelled : size),
      count_(count),
      forward_wire_(forward_wire) {
  // Note [Folded ring]: a fold's forwarded objects would lap the real ring under labels of the modelled one.
  if (model_ != size_ && (size_ < 2 || model_ % size_ != 0 || forward_wire_))
    throw InputError("a folded ring needs at least 2 ranks, dividing the modelled " + std::to_string(model_) +
                     ", and per-hop all-gathers (got " + std::to_string(size_) + " ranks" +
                     (forward_wire_ ? ", forwarded all-gathers)" : ")"));
  layout_ = SegmentLayout(segment_bytes, max_chunk(), overhead);
}

Hop RingGeometry::scatter_reduce_hop(std::uint32_t s) const {
  const auto p = static_cast<std::uint32_t>(model_);
  const auto r = static_cast<std::uint32_t>(rank_);
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  // What the predecessor sends at this hop (unfolded: r - 1 - s). Note [Folded ring].
  const std::uint32_t out = (r + p - s) % p;
  const std::uint32_t in = (static_cast<std::uint32_t>(prev) + p - s) % p;
  Hop h;
  h.phase = MessagePhase::ScatterReduce;
  h.index = s;
  h.send = {next, chunk(out), out, rank_};
  h.recv = {prev, chunk(in), in, prev};
  h.reduce = true;
  // The last one: its chunk is the first all-gather hop's, (r + 1) — in a fold not on rank 0, which
  // reduces what its real predecessor sent (Note [Folded ring]).
  h.fuse = s + 2 == p && in == (r + 1) % p;
  return h;
}

Hop RingGeometry::all_gather_hop(std::uint32_t s) const {
  const auto p = static_cast<std::uint32_t>(model_);
  const auto r = static_cast<std::uint32_t>(rank_);
  const int prev = (rank_ + size_ - 1) % size_;
  const std::uint32_t out = (r + 1 + p - s) % p;
  const std::uint32_t in = (static_cast<std::uint32_t>(prev) + 1 + p - s) % p;  // the predecessor's out
  // The owner of chunk c holds its finished sum: modelled rank c - 1.
  const auto owner = [this](std::uint32_t c) { return (static_cast<int>(c) + model_ - 1) % model_; };
  Hop h;
  h.phase = MessagePhase::AllGather;
  h.index = s;
  h.send = {(rank_ + 1) % size_, chunk(out), out, owner(out)};
  h.recv = {prev, chunk(in), in, owner(in)};
  h.forwarded = forward_wire_;
  h.reseal = !(forward_wire_ && s > 0);  // later hops resend the owner's sealed bytes
  return h;
}

ElemRange RingGeometry::owned_chunk(int rank, int size, std::size_t count) {
  return balanced_block(count, static_cast<std::size_t>(size), static_cast<std::size_t>((rank + 1) % size));
}

ElemRange RingGeometry::chunk(std::uint32_t c) const {
  return balanced_block(count_, static_cast<std::size_t>(model_), c);
}

}  // namespace tt::comm
