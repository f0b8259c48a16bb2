#include "engine/gradients/gradient_paths.h"

#include <optional>

#include "base/error.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/transport/mpi_allreduce.h"
#include "engine/gradients/device_ring_path.h"
#include "engine/gradients/nccl_path.h"

namespace tt {

comm::RingOptions ring_options(const TeeSwitches& ts, std::size_t segment_bytes) {
  comm::RingOptions ro;
  ro.segment_bytes = (ts.on && !ts.pipeline) ? 0 : segment_bytes;
  ro.all_gather = ts.forward_ag ? comm::AllGatherMode::ForwardWire : comm::AllGatherMode::PerHop;
  return ro;
}

PathRequest path_request(const GradientSetup& s) {
  return PathRequest{.parallel = s.parallel,
                     .compute = s.compute,
                     .tee = s.tee,
                     .adversary = s.adversary,
                     .device_gradients = s.platform.device_gradients(),
                     .mpirun = s.mpi != nullptr,
                     .several_ranks = s.transport.size() > 1};
}

namespace {

// The pick as the ring for `ts` cuts it: cc seals each chunk whole (ring_options).
SegmentPick as_cut(SegmentPick pick, const TeeSwitches& ts) {
  if (ring_options(ts, pick.bytes).segment_bytes == 0) return {0, "whole chunks (--tee-pipeline off)"};
  return pick;
}

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
    const platform::HostPathParts parts = s.platform.host_path({
        .transport = s.transport,
        .channel = s.channel,
        .sealed = s.sealed,
        .tee = ts.on,
        .device_crypto = ts.device_crypto,
        .forward_ag = ts.forward_ag,
        .emulated_links = o.link == LinkModel::Emulate,
        .link_gbps = o.link_gbps,
        .cc_transfer_us = o.cc_transfer_us,
        .model_ranks = o.model_ranks,
        .crypto = [&host = s.compute.host,
                   ts](const EmulatedGpu& gpu) { return modelled_crypto(host, ts, gpu); },
        .profiler = s.profiler,
    });
    segment_ = as_cut(pick_segment(o.segment_kb, s.link), ts);
    comm::RingOptions ro = ring_options(ts, segment_.bytes);
    // The hierarchical algorithm's nodes (--gpus-per-node; an emulated cluster's links follow them).
    ro.node_ranks = s.compute.gpu.topology.gpus_per_node;
    ro.model_ranks = o.model_ranks;  // Note [Folded ring] (comm/allreduce/ring_geometry.h)
    algos_.emplace(parts.wire, parts.channel, parts.memory, ro, &s.profiler);
    // Note [same algorithm on every rank] (allreduce_selection.h): the model's inputs are agreed ones.
    selection_.emplace(o.algo, cost_model_for(o, s.compute, ts, s.platform.modelled_gpu(), s.link),
                       o.modelled_world(parts.wire.size()), ro.segment_bytes, parts.channel.overhead(),
                       /*split=*/o.shard != ShardStage::None, s.prices);
    what_ = selection_->describe() + " over " + parts.wire.name() + ", " + parts.channel.name();
  }
  void sum(float* g, std::size_t n, long step, int bucket) override {
    const comm::AlgoChoice& c = selection_->choice(bucket, n);
    algos_->allreduce_sum(c.algo, g, n, bucket_message_id(step, bucket), c.segment_bytes);
  }
  // Every algorithm is split, each in the ring's shard layout (Note [Shard handover],
  // comm/allreduce/shard_handover.h); auto prices the halves (AlgoSelection's split).
  bool shards() const override { return true; }
  void reduce_scatter(float* g, std::size_t n, long step, int bucket) override {
    const comm::AlgoChoice& c = selection_->choice(bucket, n);
    algos_->reduce_scatter_sum(c.algo, g, n, bucket_message_id(step, bucket), c.segment_bytes);
  }
  void all_gather(float* x, std::size_t n, long step, int bucket) override {
    const comm::AlgoChoice& c = selection_->choice(bucket, n);
    algos_->all_gather(c.algo, x, n, bucket_message_id(step, bucket), c.segment_bytes);
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
// host copy, host all-reduce (or one of its halves), host -> device copy, serialized per bucket.
class StagedPath final : public GradientPath {
 public:
  StagedPath(std::unique_ptr<GradientPath> inner, Backend& backend, Profiler& profiler)
      : inner_(std::move(inner)), backend_(backend), profiler_(profiler) {}
  void sum(float* g, std::size_t n, long step, int bucket) override {
    staged(g, n, [&](float* host) { inner_->sum(host, n, step, bucket); });
  }
  // The halves cross whole buckets, as the all-reduce does: the shard's chunk is where the ring's chunk
  // layout puts it, and a crossing per bucket is what H100 CC's bounce buffers cost.
  bool shards() const override { return inner_->shards(); }
  void reduce_scatter(float* g, std::size_t n, long step, int bucket) override {
    staged(g, n, [&](float* host) { inner_->reduce_scatter(host, n, step, bucket); });
  }
  void all_gather(float* x, std::size_t n, long step, int bucket) override {
    staged(x, n, [&](float* host) { inner_->all_gather(host, n, step, bucket); });
  }
  std::string describe() const override { return "host staging, " + inner_->describe(); }
  std::optional<SegmentPick> segment() const override { return inner_->segment(); }
  AlgoSelection* selection() override { return inner_->selection(); }

 private:
  template <typename Fn>
  void staged(float* device, std::size_t n, Fn&& on_host) {
    if (staging_.size() < n) staging_.resize(n);
    {
      ScopedPhase p(&profiler_, Phase::Stage);
      backend_.copy_to_host(staging_.data(), device, n * sizeof(float));  // (n,) floats
    }
    on_host(staging_.data());
    ScopedPhase p(&profiler_, Phase::Stage);
    backend_.copy_to_device(device, staging_.data(), n * sizeof(float));
  }

  std::unique_ptr<GradientPath> inner_;
  Backend& backend_;
  Profiler& profiler_;
  std::vector<float> staging_;  // (largest bucket,) floats
};

void needs_mpirun(const PathRequest& r, const char* what, std::vector<std::string>& out) {
  if (!r.mpirun) out.push_back(std::string(what) + " needs ranks started by mpirun");
}

void refuse_adversary(const PathRequest& r, std::vector<std::string>& out) {
  if (r.adversary)
    out.push_back(
        "--adversary sits on teetrain's host ring; MPI_Allreduce, NCCL and the device ring bypass "
        "it: use --allreduce ring on --device cpu (add --compute emulate for GPU-speed compute; in TEE "
        "mode with --tee cc or --tee-device-crypto off, so that the host really seals)");
}

// --shard splits our algorithms into their reduce-scatter and all-gather (ring, rd, rhd and hier alike on
// host buffers: Note [Shard handover], comm/allreduce/shard_handover.h; the ring on a GPU's, and host
// ones staged from it); every row asks this.
void refuse_shard(const PathRequest& r, std::vector<std::string>& out) {
  const ShardStage shard = r.parallel.shard;
  if (shard == ShardStage::None) return;
  if (r.parallel.allreduce != AllreduceProvider::Ours)
    out.push_back(std::string("--shard ") + name(shard) +
                  " splits teetrain's all-reduce into its reduce-scatter and all-gather; --allreduce " +
                  name(r.parallel.allreduce) + " has none: use --allreduce ring, or --shard none");
}

// A vendor all-reduce (MPI_Allreduce, NCCL): plaintext, none of our algorithms, real time on real links.
void refuse_vendor(const PathRequest& r, std::vector<std::string>& out) {
  const char* vendor = name(r.parallel.allreduce);
  if (r.tee.on)
    out.push_back(std::string("--allreduce ") + vendor +
                  " sends gradients in plaintext; use --allreduce ring with --tee");
  refuse_adversary(r, out);
  if (r.parallel.algo != comm::ReduceAlgo::Ring)
    out.push_back(std::string("--allreduce-algo ") + comm::algo_name(r.parallel.algo) +
                  " chooses among teetrain's own algorithms: use it with --allreduce ring");
  if (r.parallel.link == LinkModel::Emulate)
    out.push_back("--link emulate applies to our ring; use --allreduce ring");
  if (r.compute.virtual_time())
    out.push_back(std::string("--time virtual models teetrain's own algorithms; ") + vendor +
                  "'s time would be this machine's: use --allreduce ring, or --time wall");
}

bool device_ring_asked(const PathRequest& r) {
  return r.parallel.allreduce == AllreduceProvider::Ours && r.device_gradients &&
         (!r.tee.on || r.tee.device_crypto) && r.several_ranks;
}

std::unique_ptr<GradientPath> build_device_ring(const GradientSetup& s) {
  DeviceRingConfig dc;
  const SegmentPick segment = as_cut(pick_segment(s.parallel.segment_kb, s.link), s.tee);
  dc.ring = ring_options(s.tee, segment.bytes);
  dc.sealed = s.tee.on ? s.sealed : nullptr;
  if (s.parallel.link_gbps > 0) dc.link = comm::LinkLimit{s.parallel.link_gbps, {}};
  dc.ranks_on_host = s.ranks_on_host;
  return make_device_ring_path(s.platform.backend(), *s.mpi, dc, segment, s.profiler);
}

constexpr GradientPathEntry kPaths[] = {
    {"nccl", false, [](const PathRequest& r) { return r.parallel.allreduce == AllreduceProvider::Nccl; },
     [](const PathRequest& r, std::vector<std::string>& out) {
       if (r.compute.device != DeviceKind::Cuda)
         out.push_back(
             "--allreduce nccl reduces GPU buffers with NCCL; add --device cuda, or use --allreduce "
             "ring|mpi");
       refuse_vendor(r, out);
       refuse_shard(r, out);
       needs_mpirun(r, "--allreduce nccl", out);
     },
     [](const GradientSetup& s) {
       return make_nccl_path(s.platform.backend(), s.mpi->comm(), s.mpi->timeout());
     }},
    {"device ring", false, device_ring_asked,
     [](const PathRequest& r, std::vector<std::string>& out) {
       refuse_adversary(r, out);
       if (r.parallel.algo != comm::ReduceAlgo::Ring)
         out.push_back(
             std::string("--allreduce-algo ") + comm::algo_name(r.parallel.algo) +
             " runs on host buffers; the device ring of --device cuda is a ring: use --allreduce-algo "
             "ring, or --tee cc (gradients staged through the host)");
       refuse_shard(r, out);
       needs_mpirun(r, "--allreduce ring on this device (the device ring)", out);
     },
     build_device_ring},
    {"mpi", true, [](const PathRequest& r) { return r.parallel.allreduce == AllreduceProvider::Mpi; },
     [](const PathRequest& r, std::vector<std::string>& out) {
       refuse_vendor(r, out);
       refuse_shard(r, out);
       needs_mpirun(r, "--allreduce mpi", out);
     },
     [](const GradientSetup& s) -> std::unique_ptr<GradientPath> {
       return std::make_unique<MpiPath>(*s.mpi);
     }},
    {"host", true, [](const PathRequest& r) { return r.parallel.allreduce == AllreduceProvider::Ours; },
     [](const PathRequest& r, std::vector<std::string>& out) {
       // The adversary's wire is the host's; with --device cuda the gradients' bytes never cross it
       // in the clear it attacks (the device ring), or do so only staged: refused alike.
       if (r.compute.device == DeviceKind::Cuda) refuse_adversary(r, out);
       refuse_shard(r, out);
     },
     [](const GradientSetup& s) -> std::unique_ptr<GradientPath> { return std::make_unique<HostPath>(s); }},
};

}  // namespace

std::span<const GradientPathEntry> gradient_paths() {
  return kPaths;
}

const GradientPathEntry& served_by(const PathRequest& r) {
  for (const GradientPathEntry& row : kPaths) {
    if (row.asked(r)) return row;
  }
  throw RunError(std::string("no gradient path serves --allreduce ") + name(r.parallel.allreduce));
}

std::vector<std::string> path_conflicts(const PathRequest& r) {
  std::vector<std::string> out;
  served_by(r).refuse(r, out);
  return out;
}

std::unique_ptr<GradientPath> build_gradient_path(const GradientSetup& s) {
  const PathRequest r = path_request(s);
  const GradientPathEntry& row = served_by(r);
  std::vector<std::string> conflicts;
  row.refuse(r, conflicts);
  if (!conflicts.empty()) {
    std::string msg;
    for (const std::string& c : conflicts) msg += (msg.empty() ? "" : "; ") + c;
    throw InputError(msg);
  }
  std::unique_ptr<GradientPath> path = row.build(s);
  if (row.host_buffers && s.platform.device_gradients())
    return std::make_unique<StagedPath>(std::move(path), s.platform.backend(), s.profiler);
  return path;
}

}  // namespace tt
