#include "engine/gradient_reduction.h"

#include "base/error.h"
#include "comm/mpi_allreduce.h"

namespace tt {

comm::RingOptions ring_options(const TeeSwitches& ts, int segment_kb) {
  comm::RingOptions ro;
  ro.segment_bytes = (ts.on && !ts.pipeline) ? 0 : static_cast<std::size_t>(segment_kb) * 1024;
  ro.all_gather = ts.forward_ag ? comm::AllGatherMode::ForwardWire : comm::AllGatherMode::PerHop;
  return ro;
}

GradientReduction::GradientReduction(const GradientSetup& s) : platform_(s.platform) {
  const RunPlan& o = s.plan;
  const TeeSwitches& ts = s.tee;
  const bool cuda = s.platform.kind() == DeviceKind::Cuda;
  Backend& backend = s.platform.backend();
  const comm::RingOptions ro = ring_options(ts, o.segment_kb);

  const bool device_ring =
      cuda && o.allreduce == AllreduceAlgo::Ring && (!ts.on || ts.device_crypto) && s.transport.size() > 1;
  if ((o.allreduce != AllreduceAlgo::Ring || device_ring) && s.mpi == nullptr)
    throw InputError(std::string("--allreduce ") + name(o.allreduce) +
                     " on this device needs ranks started by mpirun");
  if (o.allreduce == AllreduceAlgo::Nccl) {
    nccl_ = make_nccl_allreduce(backend, s.mpi->comm(), s.mpi->timeout());
    fn_ = nccl_->fn();
    path_ = "ncclAllReduce";
    return;
  }
  if (device_ring) {
    DeviceRingConfig dc;
    dc.ring = ro;
    dc.sealed = ts.on ? s.sealed : nullptr;
    if (o.link_gbps > 0) dc.link = comm::LinkLimit{o.link_gbps, {}};
    dc.ranks_on_host = s.ranks_on_host;
    device_ring_ = make_device_allreduce(backend, *s.mpi, dc, s.profiler);
    fn_ = device_ring_->fn();
    path_ = device_ring_->describe();
    return;
  }

  if (o.allreduce == AllreduceAlgo::Mpi) {
    fn_ = [&t = *s.mpi](float* g, std::size_t n, long, int) { comm::mpi_allreduce_sum(t.comm(), g, n); };
    path_ = "MPI_Allreduce";
  } else {
    host_ring(s, ro);
  }
  if (cuda) {
    // GPU buckets reach a host all-reduce through one staging buffer, as H100 CC's bounce buffers do:
    // device -> host copy, host all-reduce, host -> device copy, serialized per bucket.
    fn_ = [this, inner = std::move(fn_), &backend, &prof = s.profiler](float* g, std::size_t n, long step,
                                                                       int bucket) {
      if (staging_.size() < n) staging_.resize(n);
      {
        ScopedPhase p(&prof, Phase::Stage);
        backend.copy_to_host(staging_.data(), g, n * sizeof(float));  // (n,) floats
      }
      inner(staging_.data(), n, step, bucket);
      ScopedPhase p(&prof, Phase::Stage);
      backend.copy_to_device(g, staging_.data(), n * sizeof(float));
    };
    path_ = "host staging, " + path_;
  }
}

// Our algorithms on host buffers, through the sealed channel in TEE mode, over the channel, links and
// memory the platform gives them (an emulated GPU's crypto, bounce-buffer crossings and links).
void GradientReduction::host_ring(const GradientSetup& s, comm::RingOptions ro) {
  const RunPlan& o = s.plan;
  const TeeSwitches& ts = s.tee;
  const platform::RingParts parts = s.platform.host_ring(
      {s.transport, s.channel, s.sealed, ts.on, ts.device_crypto, ts.forward_ag, o.link == LinkModel::Emulate,
       o.link_gbps, o.cc_transfer_us,
       [&o, ts](const EmulatedGpu& gpu) { return modelled_crypto(o, ts, gpu); }, s.profiler});
  comm::Transport& wire = parts.wire;
  comm::Channel* channel = &parts.channel;
  algos_.emplace(wire, *channel, parts.memory, ro, &s.profiler);
  // Note [same algorithm on every rank] (allreduce_selection.h): the model's inputs are agreed ones.
  selection_.emplace(o.allreduce_algo,
                     o.allreduce_cost.empty() ? default_cost_model(o, ts, s.platform.modelled_gpu())
                                              : load_cost_model(o.allreduce_cost, o.tee.mode),
                     wire.size(), ro.segment_bytes);
  fn_ = [this](float* g, std::size_t n, long step, int bucket) {
    comm::MessageContext id;
    id.step = static_cast<uint64_t>(step);
    id.bucket = static_cast<uint32_t>(bucket);
    algos_->allreduce_sum(selection_->pick(bucket, n), g, n, id);
  };
  path_ = selection_->describe() + " over " + wire.name() + ", " + channel->name();
}

}  // namespace tt
