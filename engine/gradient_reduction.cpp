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

GradientReduction::GradientReduction(const GradientSetup& s)
    : gpu_(dynamic_cast<EmulatedBackend*>(&s.backend)) {
  const RunPlan& o = s.plan;
  const TeeSwitches& ts = s.tee;
  const bool cuda = s.backend.kind() == DeviceKind::Cuda;
  const comm::RingOptions ro = ring_options(ts, o.segment_kb);

  const bool device_ring =
      cuda && o.allreduce == AllreduceAlgo::Ring && (!ts.on || ts.device_crypto) && s.transport.size() > 1;
  if ((o.allreduce != AllreduceAlgo::Ring || device_ring) && s.mpi == nullptr)
    throw InputError(std::string("--allreduce ") + name(o.allreduce) +
                     " on this device needs ranks started by mpirun");
  if (o.allreduce == AllreduceAlgo::Nccl) {
    nccl_ = make_nccl_allreduce(s.backend, s.mpi->comm(), s.mpi->timeout());
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
    device_ring_ = make_device_allreduce(s.backend, *s.mpi, dc, s.profiler);
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
    fn_ = [this, inner = std::move(fn_), &backend = s.backend, &prof = s.profiler](float* g, std::size_t n,
                                                                                   long step, int bucket) {
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

// The ring's channel: the run's channel, or what the emulated platform puts in its place — the GPU's
// AES-GCM as a cost (wall clock), a sealed token per message with modelled crypto (virtual time), and
// H100 CC's bounce-buffer crossings on a ring the host seals.
// Virtual time is the profiler's clock (TrainingRun sets it from the plan): a virtual ring needs a
// virtual clock to book its links and crypto in.
comm::Channel* GradientReduction::ring_channel(const GradientSetup& s) {
  const RunPlan& o = s.plan;
  const TeeSwitches& ts = s.tee;
  comm::Channel* channel = &s.channel;
  if (s.profiler.virtual_time() && ts.on) {
    const comm::CryptoCostModel m = modelled_crypto(o, ts, gpu_->gpu());
    channel = &virtual_seal_.emplace(*s.sealed, m, s.profiler.clock(), &s.profiler);
  } else if (ts.device_crypto && gpu_ != nullptr) {
    // fast with device crypto on an emulated GPU: the ring's messages are sealed "on the GPU", i.e.
    // cost waits at the GPU's AES-GCM rate; every other collective keeps the real sealed channel.
    channel = &gpu_crypto_.emplace(gpu_->gpu().aead_gbps(), ts.forward_ag, &s.profiler, &gpu_->comm_stream());
  }
  // --cc-transfer-us: a ring sealed on the host pays H100 CC's fixed cost per bounce-buffer crossing
  // of the emulated GPU's chunks (cc_transfer_channel.h). Plaintext and GPU-sealed rings never cross.
  if (o.cc_transfer_us > 0 && ts.on && !ts.device_crypto) {
    cc_transfers_.emplace(*channel, o.cc_transfer_us, &s.profiler, &s.profiler.clock());
    channel = &*cc_transfers_;
  }
  return channel;
}

// Note [Modelled links need modelled compute]: a modelled link moves no payload (a token, or nothing),
// so the bytes that arrive are not the bytes that were sent; only synthetic gradients, whose values
// nobody reads (an emulated GPU's), may cross one. Links are therefore modelled exactly when compute
// is: with --link emulate (which run_plan.cpp refuses without --compute emulate) and in every emulated
// ring in virtual time; the ring's adds then live on the same emulated GPU (EmulatedRingMemory: costs,
// never done), and gpu_ is that GPU.
bool GradientReduction::modelled_links(const GradientSetup& s) {
  return s.plan.link == LinkModel::Emulate || s.profiler.virtual_time();
}

// The ring's wire: --link emulate (and every emulated ring in virtual time) sends tokens over modelled
// links — plaintext messages of the emulated GPUs carry no payload, sealed ones in virtual time carry
// their sealed token; otherwise messages move for real, paced at --link-gbps if given.
comm::Transport& GradientReduction::ring_wire(const GradientSetup& s, const comm::Channel& channel) {
  const RunPlan& o = s.plan;
  const bool emulated_links = modelled_links(s);
  const double link_gbps = o.link_gbps > 0  ? o.link_gbps
                           : emulated_links ? gpu_->gpu().spec.nvlink_gbps
                                            : 0.0;
  if (s.profiler.virtual_time()) {
    const std::size_t carry = virtual_seal_ ? virtual_seal_->carried_bytes() : 0;
    return emulated_link_.emplace(s.transport, comm::LinkLimit{link_gbps, {}}, &s.profiler.clock(), carry,
                                  &s.profiler);
  }
  if (emulated_links && channel.pass_through())
    return emulated_link_.emplace(s.transport, comm::LinkLimit{link_gbps, {}});
  if (link_gbps > 0) return link_.emplace(s.transport, comm::LinkLimit{link_gbps, {}});
  return s.transport;
}

// Our algorithms on host buffers, through the sealed channel in TEE mode, with the emulated GPU's
// crypto, bounce-buffer crossings and links layered on as the plan asks.
void GradientReduction::host_ring(const GradientSetup& s, comm::RingOptions ro) {
  const RunPlan& o = s.plan;
  const TeeSwitches& ts = s.tee;
  comm::Channel* channel = ring_channel(s);
  comm::Transport& wire = ring_wire(s, *channel);
  comm::RingMemory& memory =
      modelled_links(s) ? static_cast<comm::RingMemory&>(gpu_memory_.emplace(*gpu_)) : host_memory_;
  algos_.emplace(wire, *channel, memory, ro, &s.profiler);
  // Note [same algorithm on every rank] (allreduce_selection.h): the model's inputs are agreed ones.
  selection_.emplace(o.allreduce_algo,
                     o.allreduce_cost.empty() ? default_cost_model(o, ts, gpu_ ? &gpu_->gpu() : nullptr)
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
