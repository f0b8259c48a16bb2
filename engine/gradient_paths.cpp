#include "engine/gradient_paths.h"

#include <optional>

#include "base/error.h"
#include "comm/allreduce_algo.h"
#include "comm/mpi_allreduce.h"
#include "engine/device_allreduce.h"
#include "engine/nccl_allreduce.h"

namespace tt {

comm::RingOptions ring_options(const TeeSwitches& ts, std::size_t segment_bytes) {
  comm::RingOptions ro;
  ro.segment_bytes = (ts.on && !ts.pipeline) ? 0 : segment_bytes;
  ro.all_gather = ts.forward_ag ? comm::AllGatherMode::ForwardWire : comm::AllGatherMode::PerHop;
  return ro;
}

RingTransport ring_link(const GradientSetup& s) {
  // Ranks in one process (tests, tools) share no MPI transport: nothing has an eager limit.
  if (s.mpi == nullptr) return RingTransport{.name = "in-process"};
  return agreed_transport(ring_transport(s.ranks_on_host, s.transport.size(),
                                         s.parallel.link == LinkModel::Emulate, s.shm_inline_bytes),
                          s.mpi->comm());
}

namespace {

// The pick as the ring for `ts` cuts it: cc seals each chunk whole (ring_options).
SegmentPick as_cut(SegmentPick pick, const TeeSwitches& ts) {
  if (ring_options(ts, pick.bytes).segment_bytes == 0) return {0, "whole chunks (--tee-pipeline off)"};
  return pick;
}

// The paths built by other pieces (NCCL, the device ring) hand over a function and a description.
template <typename Impl>
class FnPath final : public GradientPath {
 public:
  FnPath(std::unique_ptr<Impl> impl, std::string what, std::optional<SegmentPick> segment = std::nullopt)
      : impl_(std::move(impl)), fn_(impl_->fn()), what_(std::move(what)), segment_(segment) {}
  void sum(float* g, std::size_t n, long step, int bucket) override { fn_(g, n, step, bucket); }
  std::string describe() const override { return what_; }
  std::optional<SegmentPick> segment() const override { return segment_; }

 private:
  std::unique_ptr<Impl> impl_;
  AllreduceFn fn_;
  std::string what_;
  std::optional<SegmentPick> segment_;
};

class MpiPath final : public GradientPath {
 public:
  explicit MpiPath(comm::MpiTransport& mpi) : mpi_(mpi) {}
  void sum(float* g, std::size_t n, long, int) override { comm::mpi_allreduce_sum(mpi_.comm(), g, n); }
  std::string describe() const override { return "MPI_Allreduce"; }

 private:
  comm::MpiTransport& mpi_;
};

// Our algorithms on host buffers, through the sealed channel in TEE mode, over the channel, links and
// memory the platform gives them (an emulated GPU's crypto, bounce-buffer crossings and links).
class HostPath final : public GradientPath {
 public:
  explicit HostPath(const GradientSetup& s) {
    const ParallelOptions& o = s.parallel;
    const TeeSwitches& ts = s.tee;
    const platform::RingParts parts = s.platform.host_ring(
        {s.transport, s.channel, s.sealed, ts.on, ts.device_crypto, ts.forward_ag,
         o.link == LinkModel::Emulate, o.link_gbps, o.cc_transfer_us,
         [&host = s.compute.host, ts](const EmulatedGpu& gpu) { return modelled_crypto(host, ts, gpu); },
         s.profiler});
    const RingTransport link = ring_link(s);
    segment_ = as_cut(pick_segment(o.segment_kb, link), ts);
    const comm::RingOptions ro = ring_options(ts, segment_.bytes);
    algos_.emplace(parts.wire, parts.channel, parts.memory, ro, &s.profiler);
    // Note [same algorithm on every rank] (allreduce_selection.h): the model's inputs are agreed ones.
    selection_.emplace(o.algo, cost_model_for(o, s.compute, ts, s.platform.modelled_gpu(), link.eager_limit),
                       parts.wire.size(), ro.segment_bytes, parts.channel.overhead());
    what_ = selection_->describe() + " over " + parts.wire.name() + ", " + parts.channel.name();
  }
  void sum(float* g, std::size_t n, long step, int bucket) override {
    comm::MessageContext id;
    id.step = static_cast<uint64_t>(step);
    id.bucket = static_cast<uint32_t>(bucket);
    const comm::AlgoChoice& c = selection_->choice(bucket, n);
    algos_->allreduce_sum(c.algo, g, n, id, c.segment_bytes);
  }
  std::string describe() const override { return what_; }
  std::optional<SegmentPick> segment() const override { return segment_; }
  AlgoSelection* selection() override { return &*selection_; }

 private:
  SegmentPick segment_;
  std::optional<comm::Allreducer> algos_;
  std::optional<AlgoSelection> selection_;
  std::string what_;
};

// GPU buckets reach a host path through one staging buffer, as H100 CC's bounce buffers do: device ->
// host copy, host all-reduce, host -> device copy, serialized per bucket.
class StagedPath final : public GradientPath {
 public:
  StagedPath(std::unique_ptr<GradientPath> inner, Backend& backend, Profiler& profiler)
      : inner_(std::move(inner)), backend_(backend), profiler_(profiler) {}
  void sum(float* g, std::size_t n, long step, int bucket) override {
    if (staging_.size() < n) staging_.resize(n);
    {
      ScopedPhase p(&profiler_, Phase::Stage);
      backend_.copy_to_host(staging_.data(), g, n * sizeof(float));  // (n,) floats
    }
    inner_->sum(staging_.data(), n, step, bucket);
    ScopedPhase p(&profiler_, Phase::Stage);
    backend_.copy_to_device(g, staging_.data(), n * sizeof(float));
  }
  std::string describe() const override { return "host staging, " + inner_->describe(); }
  std::optional<SegmentPick> segment() const override { return inner_->segment(); }
  AlgoSelection* selection() override { return inner_->selection(); }

 private:
  std::unique_ptr<GradientPath> inner_;
  Backend& backend_;
  Profiler& profiler_;
  std::vector<float> staging_;  // (largest bucket,) floats
};

void needs_mpirun(const GradientSetup& s, const char* what, std::vector<std::string>& out) {
  if (s.mpi == nullptr) out.push_back(std::string(what) + " needs ranks started by mpirun");
}

bool device_ring_asked(const GradientSetup& s) {
  return s.parallel.allreduce == AllreduceAlgo::Ring && s.platform.device_gradients() &&
         (!s.tee.on || s.tee.device_crypto) && s.transport.size() > 1;
}

std::unique_ptr<GradientPath> build_nccl(const GradientSetup& s) {
  return std::make_unique<FnPath<NcclAllreduce>>(
      make_nccl_allreduce(s.platform.backend(), s.mpi->comm(), s.mpi->timeout()), "ncclAllReduce");
}

std::unique_ptr<GradientPath> build_device_ring(const GradientSetup& s) {
  DeviceRingConfig dc;
  const SegmentPick segment = as_cut(pick_segment(s.parallel.segment_kb, ring_link(s)), s.tee);
  dc.ring = ring_options(s.tee, segment.bytes);
  dc.sealed = s.tee.on ? s.sealed : nullptr;
  if (s.parallel.link_gbps > 0) dc.link = comm::LinkLimit{s.parallel.link_gbps, {}};
  dc.ranks_on_host = s.ranks_on_host;
  auto ring = make_device_allreduce(s.platform.backend(), *s.mpi, dc, s.profiler);
  std::string what = ring->describe();
  return std::make_unique<FnPath<DeviceAllreduce>>(std::move(ring), std::move(what), segment);
}

constexpr GradientPathEntry kPaths[] = {
    {GradientPathKind::Nccl, "nccl", false,
     [](const GradientSetup& s) { return s.parallel.allreduce == AllreduceAlgo::Nccl; },
     [](const GradientSetup& s, std::vector<std::string>& out) { needs_mpirun(s, "--allreduce nccl", out); },
     build_nccl},
    {GradientPathKind::DeviceRing, "device ring", false, device_ring_asked,
     [](const GradientSetup& s, std::vector<std::string>& out) {
       needs_mpirun(s, "--allreduce ring on this device (the device ring)", out);
     },
     build_device_ring},
    {GradientPathKind::Mpi, "mpi", true,
     [](const GradientSetup& s) { return s.parallel.allreduce == AllreduceAlgo::Mpi; },
     [](const GradientSetup& s, std::vector<std::string>& out) { needs_mpirun(s, "--allreduce mpi", out); },
     [](const GradientSetup& s) -> std::unique_ptr<GradientPath> {
       return std::make_unique<MpiPath>(*s.mpi);
     }},
    {GradientPathKind::Host, "host", true,
     [](const GradientSetup& s) { return s.parallel.allreduce == AllreduceAlgo::Ring; },
     [](const GradientSetup&, std::vector<std::string>&) {},
     [](const GradientSetup& s) -> std::unique_ptr<GradientPath> { return std::make_unique<HostPath>(s); }},
};

}  // namespace

std::span<const GradientPathEntry> gradient_paths() {
  return kPaths;
}

const GradientPathEntry& gradient_path(GradientPathKind kind) {
  for (const GradientPathEntry& r : kPaths) {
    if (r.kind == kind) return r;
  }
  throw RunError("no gradient path of this kind");  // unreachable: the table has a row of every kind
}

const GradientPathEntry& select_gradient_path(const GradientSetup& s) {
  for (const GradientPathEntry& row : kPaths) {
    if (!row.asked(s)) continue;
    std::vector<std::string> conflicts;
    row.refuse(s, conflicts);
    if (conflicts.empty()) return row;
    std::string msg;
    for (const std::string& c : conflicts) msg += (msg.empty() ? "" : "; ") + c;
    throw InputError(msg);
  }
  throw InputError(std::string("no gradient path serves --allreduce ") + name(s.parallel.allreduce));
}

std::unique_ptr<GradientPath> build_gradient_path(const GradientPathEntry& row, const GradientSetup& s) {
  std::unique_ptr<GradientPath> path = row.build(s);
  if (row.host_buffers && s.platform.device_gradients())
    return std::make_unique<StagedPath>(std::move(path), s.platform.backend(), s.profiler);
  return path;
}

std::unique_ptr<GradientPath> build_gradient_path(const GradientSetup& s) {
  return build_gradient_path(select_gradient_path(s), s);
}

}  // namespace tt
