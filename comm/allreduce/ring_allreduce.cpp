#include "comm/allreduce/ring_allreduce.h"

#include <string>
#include <utility>

#include "base/error.h"

namespace tt::comm {

const char* all_gather_mode_name(AllGatherMode m) {
  return m == AllGatherMode::PerHop ? "per_hop" : "forward_wire";
}

RingAllreduce::RingAllreduce(Transport& transport, RingOptions options, Profiler* profiler)
    : t_(transport),
      channel_(&plain_),
      memory_(&host_),
      opt_(std::move(options)),
      prof_(profiler),
      hops_(transport, plain_, host_, profiler),
      name_("ring all-reduce") {}

RingAllreduce::RingAllreduce(Transport& transport, Channel& channel, RingOptions options, Profiler* profiler)
    : t_(transport),
      channel_(&channel),
      memory_(&host_),
      opt_(std::move(options)),
      prof_(profiler),
      hops_(transport, channel, host_, profiler),
      name_("ring all-reduce") {}

RingAllreduce::RingAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory,
                             RingOptions options, Profiler* profiler)
    : t_(transport),
      channel_(&channel),
      memory_(&memory),
      opt_(std::move(options)),
      prof_(profiler),
      hops_(transport, channel, memory, profiler),
      name_(memory.space() == MemorySpace::Host ? "ring all-reduce" : "device ring all-reduce") {
  check_channel_memory(name_, channel, memory);
}

void RingAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id) {
  allreduce_sum(data, count, id, opt_.segment_bytes);
}

void RingAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id,
                                  std::size_t segment_bytes) {
  run(Collective::Allreduce, data, count, id, segment_bytes);
}

void RingAllreduce::reduce_scatter_sum(float* data, std::size_t count, const MessageContext& id,
                                       std::size_t segment_bytes) {
  run(Collective::ReduceScatter, data, count, id, segment_bytes);
}

void RingAllreduce::all_gather(float* data, std::size_t count, const MessageContext& id,
                               std::size_t segment_bytes) {
  run(Collective::AllGather, data, count, id, segment_bytes);
}

void RingAllreduce::run(Collective what, float* data, std::size_t count, const MessageContext& id,
                        std::size_t segment_bytes) {
  if (t_.size() == 1 || count == 0) return;
  if (data == nullptr) throw RunError(name_ + ": null buffer");
  const auto begin = prof_ != nullptr ? prof_->now() : Profiler::Clock::now();
  const RingGeometry geo(t_.rank(), t_.size(), count, segment_bytes,
                         !channel_->pass_through() && opt_.all_gather == AllGatherMode::ForwardWire,
                         channel_->overhead(), opt_.model_ranks);
  hops_.begin(name_, geo.layout(), geo.max_chunk(), id, opt_.timeout, opt_.tag);
  memory_->wait_queued();  // the first sends read `data`: whatever produced it must be done
  // Hops in order: scatter-reduce 0..P-2, then all-gather 0..P-2.
  plan_.clear();
  const bool scatter = what != Collective::AllGather;
  const bool gather = what != Collective::ReduceScatter;
  const auto p = static_cast<std::uint32_t>(geo.modelled());
  for (std::uint32_t s = 0; s + 1 < p && scatter; ++s) plan_.push_back(geo.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < p && gather; ++s) plan_.push_back(geo.all_gather_hop(s));
  hops_.run_all(data, plan_);
  if (prof_ != nullptr && prof_->tracing())
    prof_->record(collective_label(what), Lane::Comm, begin, prof_->now());
}

}  // namespace tt::comm
