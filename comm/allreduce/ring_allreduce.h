// Ring all-reduce (sum of floats) over a Transport, every message through a Channel.
//
// P ranks, a buffer of `count` floats cut into P chunks (chunk c = elements [off_c, off_c + n_c), sizes
// differ by at most one, empty when count < P). Rank r sends to next = r+1 and receives from
// prev = r-1 (mod P):
//
//   scatter-reduce, hop s = 0..P-2: send chunk (r - s), receive chunk (r - s - 1) and add it in.
//       After P-1 hops rank r holds the full sum of chunk (r + 1): it is that chunk's owner.
//   all-gather,     hop s = 0..P-2: send chunk (r + 1 - s), receive chunk (r - s) and store it.
//
// Each hop is run by the HopRunner every all-reduce algorithm shares (comm/allreduce/hop_runner.h).
// Each chunk travels as segments of `segment_bytes` (0: one message per chunk). Within a hop every
// receive is posted first (Note [Posting receives], reduce_memory.h). Plaintext (Note [Eager sends],
// hop_runner.h): every send is posted next, then receives are finished (and added
// in) in order, so the neighbour pulls our segments while we add its own; scatter-reduce receives cycle
// through 1 MiB of segment slots (added in while still in cache), and each segment the last
// scatter-reduce hop finishes goes out at once as the first all-gather hop's message. Sealed: "seal and send
// segment k, finish receive k" runs for k = 0, 1, ...: sealing our segment k+1 overlaps the wire time
// of segment k, and opening/adding segment k overlaps the neighbour's segment k+1 in flight. A channel with a
// crypto pool or a GPU (parallelism() = w > 1) gets windows of w segments to seal or open at once.
//
// This is the ONE ring: host buffers and device buffers run the same code. What depends on the memory
// (scratch, the add, stream synchronisation, how receives are posted) is a ReduceMemory
// (comm/reduce_memory.h): HostReduceMemory by default, DeviceReduceMemory for GPU buffers
// (comm/cuda/device_ring.h, with NCCL or a host-staged transport under it). For equal inputs both give
// bit-identical results: every chunk is summed once, in ring order, one IEEE add per element.
//
// The channel decides what goes on the wire:
// - pass-through (PlainChannel): zero copies — sends read user memory, all-gather receives land in user
//   memory, scatter-reduce receives land in reduce scratch (segment slots on the host, a chunk on a
//   GPU) and are added in.
// - sealing (tee/, or the GPU codec for device memory): seal into a wire scratch, open into the reduce
//   scratch (or straight into user memory in all-gather). AllGatherMode::ForwardWire makes the all-gather
//   seal each finished chunk once (by its owner) and forward the received wire bytes unchanged; PerHop
//   re-seals at every hop. A sealing channel must work on the memory the ring's buffers live in.
//
// Error policy (docs/design.md §5): a message that does not arrive in time, arrives short, or fails to open
// is fatal; the exception names this rank and the full MessageContext (peer, step, bucket, phase,
// chunk). The buffer is then partly reduced and must not be used.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/allreduce/hop_runner.h"
#include "comm/allreduce/ring_geometry.h"
#include "comm/channel.h"
#include "comm/reduce_memory.h"
#include "comm/transport.h"
#include "core/profiler.h"

namespace tt::comm {

enum class AllGatherMode {
  PerHop,       // every hop seals what it sends (H100 CC behaviour; per-link keys suffice)
  ForwardWire,  // the owner seals once, others forward the ciphertext (needs a group key)
};
const char* all_gather_mode_name(AllGatherMode m);

struct RingOptions {
  std::size_t segment_bytes = std::size_t{1} << 20;  // 0: each chunk is one message (TEE cc mode)
  std::chrono::milliseconds timeout{0};              // per message; 0: the transport's timeout()
  AllGatherMode all_gather = AllGatherMode::PerHop;  // no effect with a pass-through channel
  int tag = tags::kRing;
  int node_ranks = 0;   // the hierarchical all-reduce's ranks per node (0: every rank on one node)
  int model_ranks = 0;  // the ring's modelled size when folded onto the transport's ranks (Note [Folded
                        // ring], ring_geometry.h; 0: the transport's size)
};

class RingAllreduce {
 public:
  // Plaintext ring on host memory (an internal PlainChannel and HostReduceMemory).
  explicit RingAllreduce(Transport& transport, RingOptions options = {}, Profiler* profiler = nullptr);
  // Ring on host memory whose messages go through `channel` (which must outlive the ring).
  RingAllreduce(Transport& transport, Channel& channel, RingOptions options = {},
                Profiler* profiler = nullptr);
  // Ring on the buffers `memory` describes (both must outlive the ring). Throws InputError when a
  // sealing channel works on another memory than the ring's.
  RingAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory, RingOptions options = {},
                Profiler* profiler = nullptr);
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  // In-place sum over all ranks of data[0, count) (in the ring's memory). Every rank must call it with
  // the same count and id. Only id.step and id.bucket are read; the ring fills in the rest of each
  // message's context. The result is bit-identical on every rank (each chunk is summed once, in ring
  // order, then copied). Device memory: work producing `data` must be complete or queued where
  // memory.wait_queued() waits for it; on return the result is complete.
  void allreduce_sum(float* data, std::size_t count, const MessageContext& id);
  // The same in segments of `segment_bytes` for this call (0: whole chunks), every rank alike.
  void allreduce_sum(float* data, std::size_t count, const MessageContext& id, std::size_t segment_bytes);
  // The all-reduce's two halves on their own (sharded data parallelism, Note [Shard layout]): the
  // scatter-reduce leaves this rank holding the finished sum of RingGeometry::owned() only (the rest
  // of data is partly reduced); the all-gather sends that range to every rank and fills in the others.
  // The same hops, messages, contexts and sealing as the all-reduce's, so reduce_scatter_sum followed
  // by all_gather gives allreduce_sum's bits.
  void reduce_scatter_sum(float* data, std::size_t count, const MessageContext& id,
                          std::size_t segment_bytes);
  void all_gather(float* data, std::size_t count, const MessageContext& id, std::size_t segment_bytes);
  // Any of the three: the scatter-reduce hops, the all-gather hops, or both (fused where they meet).
  void run(Collective what, float* data, std::size_t count, const MessageContext& id,
           std::size_t segment_bytes);

  const RingOptions& options() const { return opt_; }
  Channel& channel() { return *channel_; }
  std::size_t scratch_bytes() const { return memory_->scratch_bytes(); }

 private:
  Transport& t_;
  PlainChannel plain_;
  HostReduceMemory host_;
  Channel* channel_;
  ReduceMemory* memory_;
  RingOptions opt_;
  Profiler* prof_;
  HopRunner hops_;         // posting, sealing, checking, opening and adding each hop's messages
  std::string name_;       // "ring all-reduce", or "device ring all-reduce" on a GPU: errors say which
  std::vector<Hop> plan_;  // the current call's hops (capacity kept)
};

}  // namespace tt::comm
