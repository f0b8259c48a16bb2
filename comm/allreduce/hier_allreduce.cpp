#include "comm/allreduce/hier_allreduce.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "comm/allreduce/ring_geometry.h"

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

  HopSide global(HopSide s) const {
    if (!s.active()) return s;
    s.peer = base + stride * s.peer;
    s.origin = base + stride * s.origin;
    s.range.offset += offset;
    return s;
  }
  Hop global(Hop h) const {
    h.phase = phase;
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

std::vector<Hop> hier_hops(int rank, int size, int node_ranks, std::size_t count) {
  std::vector<Hop> out;
  if (size <= 1) return out;
  const int g = ranks_per_node(size, node_ranks);
  const int nodes = size / g;
  const int node = rank / g;
  const int local = rank % g;
  // Rank-local ring geometries: the node's ring over the whole buffer, the inter-node ring over the
  // chunk this rank owns after the node's reduce-scatter. Chunks travel whole or in segments as the
  // HopRunner's layout says; the geometry's own layout is unused here.
  const RingGeometry in_node(local, g, count, 0, false, 0);
  const ElemRange mine = in_node.owned();
  const RingGeometry across(node, nodes, mine.count, 0, false, 0);
  const SubRing local_rs{
      .base = node * g, .stride = 1, .offset = 0, .phase = MessagePhase::HierLocalScatterReduce};
  const SubRing inter_rs{
      .base = local, .stride = g, .offset = mine.offset, .phase = MessagePhase::HierInterScatterReduce};
  const SubRing inter_ag{
      .base = local, .stride = g, .offset = mine.offset, .phase = MessagePhase::HierInterAllGather};
  const SubRing local_ag{
      .base = node * g, .stride = 1, .offset = 0, .phase = MessagePhase::HierLocalAllGather};
  scatter_hops(in_node, local_rs, out);
  scatter_hops(across, inter_rs, out);
  gather_hops(across, inter_ag, out);
  gather_hops(in_node, local_ag, out);
  return out;
}

HierAllreduce::HierAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory,
                             RingOptions options, Profiler* profiler)
    : t_(transport),
      channel_(channel),
      memory_(memory),
      opt_(std::move(options)),
      prof_(profiler),
      hops_(transport, channel, memory, profiler),
      name_(memory.space() == MemorySpace::Host ? "hierarchical all-reduce"
                                                : "device hierarchical all-reduce") {
  check_channel_memory(name_, channel, memory);
  (void)ranks_per_node(transport.size(), opt_.node_ranks);  // refuse a partial node before any message
}

void HierAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id,
                                  std::size_t segment_bytes) {
  if (t_.size() == 1 || count == 0) return;
  if (data == nullptr) throw RunError(name_ + ": null buffer");
  const auto begin = prof_ != nullptr ? prof_->now() : Profiler::Clock::now();
  if (plan_.empty() || plan_count_ != count) {
    plan_ = hier_hops(t_.rank(), t_.size(), opt_.node_ranks, count);
    plan_count_ = count;
    widest_ = 0;
    for (const Hop& h : plan_) widest_ = std::max({widest_, h.send.range.count, h.recv.range.count});
  }
  hops_.begin(name_, SegmentLayout(segment_bytes, widest_, channel_.overhead()), widest_, id, opt_.timeout,
              opt_.tag);
  memory_.wait_queued();  // the first sends read `data`: whatever produced it must be done
  hops_.run_all(data, plan_);
  if (prof_ != nullptr && prof_->tracing()) prof_->record("allreduce", Lane::Comm, begin, prof_->now());
}

}  // namespace tt::comm
