// Hierarchical all-reduce (docs/design.md §5): for ranks grouped in nodes of G (the emulator's
// --gpus-per-node), the inter-node links carry 1/G of what a flat ring sends over them. Three rings,
// run hop by hop by the HopRunner every algorithm uses (comm/allreduce/hop_runner.h): same transport,
// channel, memory, segments, sealing, stream positions and errors.
//
// P ranks, N = P / G nodes; rank r is local index l = r % G of node n = r / G (ranks of a node are
// consecutive). For a buffer of `count` floats:
//   1. intra-node reduce-scatter: the ring's scatter-reduce among the G ranks of the node, on the
//      buffer cut into G balanced chunks (RingGeometry of G); rank l ends owning chunk (l + 1) % G
//      summed over its node.
//   2. inter-node all-reduce: the ring's scatter-reduce and all-gather of that chunk among the N ranks
//      with local index l (one per node), the chunk cut into N balanced blocks.
//   3. intra-node all-gather: the ring's all-gather among the node's G ranks, spreading the chunks.
// Per rank 2 (G - 1) messages on the node's links and 2 (N - 1) on the inter-node link, which carry
// 2 (N - 1) / (N G) of the buffer instead of the flat ring's 2 (P - 1) / P.
//
// Reduction order (every rank gets the same bits, every run): element i of node chunk c, inter block j
// is summed first inside each node in ring order from local index c, ((x_c + x_{c+1}) + ...) + x_{c-1}
// (indices mod G), exactly as the ring sums chunk c at P = G; then the N node sums in ring order from
// node j. So hier gives the ring's bits when N = 1 (G = P) or G = 1; otherwise its own, fixed order.
//
// Each message's context: phase hier_local_scatter_reduce / hier_inter_scatter_reduce /
// hier_inter_all_gather / hier_local_all_gather, hop = the ring hop of that phase, chunk = the node
// chunk (local phases) or the inter block (inter phases), origin and sender = global ranks. The local
// rings' link from l = G - 1 back to l = 0 and every inter-node message travel on the sealed channel's
// pair streams. The all-gathers reseal per hop (AllGatherMode::PerHop, TEE cc) or, forward-wire (TEE
// fast), seal each block once at its owner and forward the ciphertext unchanged around the node's or
// the local index's ring, as the flat ring does, on that sub-group's own streams (origin and sender =
// the owner, hop 0, receiver any, the sub-group in the context: Note [Sub-group streams],
// comm/channel.h). The halves add shard_handover and shard_handback rounds (Note [Shard handover]).
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

// Ranks per node for `size` ranks: node_ranks 0 (not given) means one node of all of them. Throws
// InputError when node_ranks does not divide size.
int ranks_per_node(int size, int node_ranks);

// The hops rank `rank` of `size` runs for a buffer of `count` floats in nodes of `node_ranks`, in order:
// the all-reduce, or one of its halves, which leave and take the ring's shard layout (Note [Shard
// handover], shard_handover.h). forward_wire: the all-gathers forward their owners' sealed blocks.
std::vector<Hop> hier_hops(int rank, int size, int node_ranks, std::size_t count,
                           Collective what = Collective::Allreduce, bool forward_wire = false);
// The range whose finished sum rank `rank` holds after the two scatter-reduces: the inter-node ring's
// block of the node ring's chunk.
ElemRange hier_owned(int rank, int size, int node_ranks, std::size_t count);

class HierAllreduce {
 public:
  // As RecursiveAllreduce: the buffers are in `memory`; options.node_ranks is G. All references must
  // outlive this object.
  HierAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory, RingOptions options = {},
                Profiler* profiler = nullptr);
  HierAllreduce(const HierAllreduce&) = delete;
  HierAllreduce& operator=(const HierAllreduce&) = delete;

  // In-place sum over all ranks of data[0, count) in segments of `segment_bytes` (0: whole ranges),
  // every rank alike; contract as RingAllreduce::allreduce_sum.
  void allreduce_sum(float* data, std::size_t count, const MessageContext& id, std::size_t segment_bytes) {
    run(Collective::Allreduce, data, count, id, segment_bytes);
  }
  // The all-reduce or one of its halves (Note [Shard handover]); contract as RingAllreduce's halves.
  void run(Collective what, float* data, std::size_t count, const MessageContext& id,
           std::size_t segment_bytes);

 private:
  Transport& t_;
  RingOptions opt_;
  bool forward_wire_;  // a sealing channel and AllGatherMode::ForwardWire
  HopRunner hops_;     // runs each call's plan, kept per collective and count
  // Per collective, for errors: "hierarchical all-reduce", ...
  std::array<std::string, 3> names_;
};

}  // namespace tt::comm
