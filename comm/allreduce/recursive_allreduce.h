// Recursive doubling and recursive halving-doubling all-reduce (sum of floats), the latency- and the
// bandwidth-optimal alternatives to the ring (docs/design.md §5), run hop by hop by the HopRunner the
// ring uses (comm/allreduce/hop_runner.h): same transport, channel, memory, segments, sealing and errors.
//
// P ranks; p2 = the largest power of two <= P, rem = P - p2. Non-power-of-two P, the usual way: among
// ranks 0 .. 2 rem - 1 each even rank is "extra": it folds its buffer into rank + 1 (a reduce hop),
// waits, and gets the result back at the end. The other p2 ranks take part with a virtual rank
// q = r / 2 (r < 2 rem) or r - rem.
//
//   recursive doubling (rd), log2 p2 steps: at step i, swap whole buffers with q ^ 2^i and add.
//       Per rank log2 p2 messages of the whole buffer: the fewest sequential messages.
//   halving-doubling (rhd, Rabenseifner): the buffer is cut into p2 balanced blocks.
//       reduce-scatter, step i = 0 .. log2 p2 - 1: with d = 2^i, send the half of the current block
//       window that the partner q ^ d keeps (the upper half when q & d is 0), receive and add the half
//       we keep; rank q ends owning one block (q's bits reversed). all-gather, step i: with
//       d = p2 / 2^(i+1), swap windows with q ^ d, doubling them.
//       2 log2 p2 messages per rank, 2 (p2 - 1) / p2 of the buffer in all: the ring's bytes.
//
// Reduction order (every rank gets the same bits, every run): both add in one pairwise tree, partners
// at distance 1 first: (x0 + x1) + (x2 + x3) for P = 4, each extra rank's buffer added into its
// partner's before anything else. rd and rhd therefore give the same bits; the ring sums chunk c from
// rank c on round the ring, so it agrees with them bit for bit only at P = 2 (one commutative add).
//
// Each message's context: phase = the algorithm's step kind (rd_fold, rd_exchange, rd_unfold,
// rhd_fold, rhd_scatter_reduce, rhd_all_gather, rhd_unfold; shard_handover and shard_handback in the
// halves), hop = the step, chunk = the first block of the range, origin = sender. Off-ring pairs are sealed
// on the sealed channel's pair streams.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "comm/allreduce/hop_runner.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/channel.h"
#include "comm/reduce_memory.h"
#include "comm/transport.h"
#include "core/profiler.h"

namespace tt::comm {

enum class RecursiveKind { Doubling, HalvingDoubling };

// The hops rank `rank` of `size` runs for a buffer of `count` floats, in order: the all-reduce, or one
// of its halves, which leave and take the ring's shard layout (Note [Shard handover],
// shard_handover.h; rd's halves are rhd's).
std::vector<Hop> recursive_hops(RecursiveKind kind, int rank, int size, std::size_t count,
                                Collective what = Collective::Allreduce);
// The block whose finished sum rank `rank` holds after the halving (empty for an extra rank).
ElemRange halving_owned(int rank, int size, std::size_t count);

// Sequential steps on the busiest rank: log2 p2 (rd) or 2 log2 p2 (rhd), plus 2 when P is not a power
// of two (fold and unfold).
int recursive_steps(RecursiveKind kind, int size);

class RecursiveAllreduce {
 public:
  // The buffers are in `memory` (shared with a ring over the same memory: one scratch for both);
  // options as the ring's (segment size, timeout, tag; the all-gather mode applies to the ring only).
  // All references must outlive this object.
  RecursiveAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory, RingOptions options = {},
                     Profiler* profiler = nullptr);
  RecursiveAllreduce(const RecursiveAllreduce&) = delete;
  RecursiveAllreduce& operator=(const RecursiveAllreduce&) = delete;

  // In-place sum over all ranks of data[0, count); contract as RingAllreduce::allreduce_sum.
  void allreduce_sum(RecursiveKind kind, float* data, std::size_t count, const MessageContext& id);
  // The same in segments of `segment_bytes` for this call (0: whole ranges), every rank alike.
  void allreduce_sum(RecursiveKind kind, float* data, std::size_t count, const MessageContext& id,
                     std::size_t segment_bytes);
  // The all-reduce (Collective::Allreduce) or one of its halves in the ring's shard layout (Note [Shard
  // handover]): the reduce-scatter leaves this rank the finished sum of RingGeometry::owned() only,
  // the all-gather sends that range to every rank. Contract as RingAllreduce's halves.
  void run(RecursiveKind kind, Collective what, float* data, std::size_t count, const MessageContext& id,
           std::size_t segment_bytes);

 private:
  Transport& t_;
  RingOptions opt_;
  HopRunner hops_;  // runs each call's plan, kept per kind, collective and count
  // Per kind and collective, for errors: "recursive doubling all-reduce", ...
  std::array<std::string, 6> names_;
};

}  // namespace tt::comm
