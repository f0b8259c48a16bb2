#include "comm/allreduce/hier_allreduce.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "comm/allreduce/ring_geometry.h"
#include "comm/allreduce/shard_handover.h"

namespace tt::comm {

namespace {

// A ring of `size` members among the global ranks base + stride * i, over the elements at `offset`:
// its hops (in member numbering, on a buffer of the ring's own count) moved to global ranks and
// buffer offsets, relabelled with the hierarchy's phase.
struct SubRing {
  int base = 0;
  int stride = 1;
  std::size_t offset = 0;
  MessagePhase phase = MessagePhase::ScatterReduce;
  SubGroup group{};  // a forwarded all-gather's group (Note [Sub-group streams])

  HopSide global(HopSide s) const {
    if (!s.active()) return s;
    s.peer = base + stride * s.peer;
    s.origin = base + stride * s.origin;
    s.range.offset += offset;
    return s;
  }
  Hop global(Hop h) const {
    h.phase = phase;
    h.group = group;
    h.send = global(h.send);
    h.recv = global(h.recv);
    return h;
  }
};

void scatter_hops(const RingGeometry& geo, const SubRing& ring, std::vector<Hop>& out) {
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(geo.size()); ++s)
    out.push_back(ring.global(geo.scatter_reduce_hop(s)));
}

void gather_hops(const RingGeometry& geo, const SubRing& ring, std::vector<Hop>& out) {
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(geo.size()); ++s)
    out.push_back(ring.global(geo.all_gather_hop(s)));
}

}  // namespace

int ranks_per_node(int size, int node_ranks) {
  if (node_ranks <= 0) return std::max(size, 1);
  if (size % node_ranks != 0) {
    throw InputError("hierarchical all-reduce: " + std::to_string(size) + " ranks do not fill nodes of " +
                     std::to_string(node_ranks) + "; pick --gpus-per-node dividing the rank count");
  }
  return node_ranks;
}

ElemRange hier_owned(int rank, int size, int node_ranks, std::size_t count) {
  const int g = ranks_per_node(size, node_ranks);
  const ElemRange mine = RingGeometry::owned_chunk(rank % g, g, count);
  const ElemRange block = RingGeometry::owned_chunk(rank / g, size / g, mine.count);
  return {mine.offset + block.offset, block.count};
}

std::vector<Hop> hier_hops(int rank, int size, int node_ranks, std::size_t count, Collective what,
                           bool forward_wire) {
  std::vector<Hop> out;
  if (size <= 1) return out;
  const int g = ranks_per_node(size, node_ranks);
  const int nodes = size / g;
  const int node = rank / g;
  const int local = rank % g;
  // Rank-local ring geometries: the node's ring over the whole buffer, the inter-node ring over the
  // chunk this rank owns after the node's reduce-scatter. Chunks travel whole or in segments as the
  // HopRunner's layout says; the geometry's own layout is unused here. Forward-wire: each all-gather
  // seals a block once at its owner, on its sub-group's streams (Note [Sub-group streams]).
  const RingGeometry in_node(local, g, count, 0, forward_wire, 0);
  const ElemRange mine = in_node.owned();
  const RingGeometry across(node, nodes, mine.count, 0, forward_wire, 0);
  const SubGroup node_group{.kind = GroupKind::Node, .base = node * g, .stride = 1, .size = g};
  const SubGroup peers{.kind = GroupKind::LocalIndex, .base = local, .stride = g, .size = nodes};
  const SubRing local_rs{
      .base = node * g, .stride = 1, .offset = 0, .phase = MessagePhase::HierLocalScatterReduce, .group = {}};
  const SubRing inter_rs{.base = local,
                         .stride = g,
                         .offset = mine.offset,
                         .phase = MessagePhase::HierInterScatterReduce,
                         .group = {}};
  const SubRing inter_ag{.base = local,
                         .stride = g,
                         .offset = mine.offset,
                         .phase = MessagePhase::HierInterAllGather,
                         .group = peers};
  const SubRing local_ag{.base = node * g,
                         .stride = 1,
                         .offset = 0,
                         .phase = MessagePhase::HierLocalAllGather,
                         .group = node_group};
  // The halves leave and take the ring's shard layout (Note [Shard handover], shard_handover.h).
  const auto natural = [size, node_ranks, count](int r) { return hier_owned(r, size, node_ranks, count); };
  if (what == Collective::AllGather) {
    handover_hops(rank, size, count, natural, false, out);
  } else {
    scatter_hops(in_node, local_rs, out);
    scatter_hops(across, inter_rs, out);
  }
  if (what == Collective::ReduceScatter) {
    handover_hops(rank, size, count, natural, true, out);
  } else {
    gather_hops(across, inter_ag, out);
    gather_hops(in_node, local_ag, out);
  }
  return out;
}

HierAllreduce::HierAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory,
                             RingOptions options, Profiler* profiler)
    : t_(transport),
      opt_(std::move(options)),
      forward_wire_(!channel.pass_through() && opt_.all_gather == AllGatherMode::ForwardWire),
      hops_(transport, channel, memory, profiler) {
  const std::string where = memory.space() == MemorySpace::Host ? "" : "device ";
  constexpr const char* kWhat[] = {"all-reduce", "reduce-scatter", "all-gather"};  // Collective
  for (std::size_t i = 0; i < names_.size(); ++i) names_[i] = where + "hierarchical " + kWhat[i];
  check_channel_memory(names_[0], channel, memory);
  (void)ranks_per_node(transport.size(), opt_.node_ranks);  // refuse a partial node before any message
}

void HierAllreduce::run(Collective what, float* data, std::size_t count, const MessageContext& id,
                        std::size_t segment_bytes) {
  if (t_.size() == 1 || count == 0) return;
  const std::string& name = names_[static_cast<std::size_t>(what)];
  if (data == nullptr) throw RunError(name + ": null buffer");
  const int rank = t_.rank();
  const int size = t_.size();
  const int node_ranks = opt_.node_ranks;
  hops_.run_plan({.kind = 0, .what = what, .count = count},
                 [=, this] { return hier_hops(rank, size, node_ranks, count, what, forward_wire_); }, data,
                 id,
                 {.name = &name, .segment_bytes = segment_bytes, .timeout = opt_.timeout, .tag = opt_.tag});
}

}  // namespace tt::comm
