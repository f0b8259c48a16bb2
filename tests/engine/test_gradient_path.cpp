// The run plan -> gradient path matrix: every combination of compute, TEE mode, all-reduce and link
// model on the CPU (CUDA's paths need a GPU and are checked by scripts/gpu-check.sh), each either
// refused by validate() with a sentence naming the conflict, or built by build_gradient_path — the one
// function `train` takes its gradient path from — on three in-process ranks, where it must name the
// path it took and, wherever payloads move, leave every rank with the exact sum.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/secure/sealed_channel.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/run/run_plan.h"
#include "platform/platform.h"
#include "tee/digest.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt {
namespace {

using comm::testing::first_wrong;
using comm::testing::pattern_buffer;

constexpr int kRanks = 3;
constexpr std::size_t kCount = 100003;  // not a multiple of the ranks or of a segment

tee::SecretBytes secret(const std::string& label) {
  const auto d = tee::sha256(label);
  return tee::SecretBytes(tee::ByteView(d));
}

comm::ChannelKeys keys(int rank) {
  comm::ChannelKeys k;
  k.send = tee::StreamSecret(secret("link " + std::to_string(rank)));
  k.recv = tee::StreamSecret(secret("link " + std::to_string((rank + kRanks - 1) % kRanks)));
  k.group = tee::GroupTrafficSecret(secret("group"));
  return k;
}

// The TEE switches of the options, as the run plan resolves them.
TeeSwitches switches(const TrainOptions& p) {
  return resolve_tee(p.tee.settings, p.compute.gpu_gradients());
}

// What the plan asks the path table about a run of several ranks under mpirun, without an adversary.
PathRequest request_of(const TrainOptions& p, bool device_gradients) {
  return PathRequest{.parallel = p.parallel,
                     .compute = p.compute,
                     .tee = switches(p),
                     .adversary = false,
                     .device_gradients = device_gradients,
                     .mpirun = true,
                     .several_ranks = true};
}

// The rule the plan follows, written out independently of engine/run/run_plan.cpp.
bool refused(const TrainOptions& p) {
  return (p.parallel.link == LinkModel::Emulate && p.compute.mode == ComputeMode::Real) ||
         (p.parallel.link == LinkModel::Emulate && p.parallel.allreduce != AllreduceProvider::Ours) ||
         p.parallel.allreduce == AllreduceProvider::Nccl ||  // needs --device cuda
         (p.tee.settings.mode != TeeMode::Off && p.parallel.allreduce != AllreduceProvider::Ours);
}

// What the path must say: the wire, then the channel.
std::string expected_path(const TrainOptions& p, const TeeSwitches& ts) {
  const bool emulate = p.compute.mode == ComputeMode::Emulated;
  const bool gpu_sealed = ts.on && ts.device_crypto && emulate;
  const bool pass_through = !ts.on || gpu_sealed;
  std::string wire = "inproc";
  if (p.parallel.link == LinkModel::Emulate)
    wire = pass_through ? "emulated-link(450 GB/s)" : "throttled(inproc)";
  const std::string channel = !ts.on       ? "plain"
                              : gpu_sealed ? "emulated-gpu-aead(149 GB/s)"
                                           : "sealed(aes-256-gcm";
  return "ring over " + wire + ", " + channel;
}

// The plan's platform, as TrainingRun builds it (one CPU thread; the emulated GPU is an H100).
std::unique_ptr<platform::Platform> make_platform(const TrainOptions& p) {
  platform::Options o;
  if (p.compute.mode == ComputeMode::Emulated) o.gpu = EmulatedGpu{gpu_spec("h100"), GpuPrecision::Tf32};
  return platform::platform_entry(p.compute.platform()).make(o);
}

struct Outcome {
  std::string path;
  long wrong = -1;  // first wrong element on any rank (-1: all exact)
};

Outcome run_path(const TrainOptions& plan) {
  const TeeSwitches ts = switches(plan);
  comm::InprocWorld world(kRanks);
  std::vector<Outcome> out(kRanks);
  const auto errors = world.run([&](comm::Transport& t) {
    const int r = t.rank();
    const std::unique_ptr<platform::Platform> platform = make_platform(plan);
    Profiler prof(false);
    comm::PlainChannel plain;
    std::unique_ptr<comm::SealedChannel> sealed;
    if (ts.on)
      sealed = std::make_unique<comm::SealedChannel>(comm::SealedChannelOptions{r, kRanks}, keys(r), &prof);
    comm::Channel& channel = sealed ? static_cast<comm::Channel&>(*sealed) : plain;
    const auto g = build_gradient_path(GradientSetup{plan.parallel, plan.compute, ts, *platform, nullptr, t,
                                                     channel, sealed.get(), kRanks, prof});
    std::vector<float> v = pattern_buffer(kCount, r);
    g->sum(v.data(), v.size(), 7, 2);
    out[static_cast<std::size_t>(r)] = {g->describe(), first_wrong(v, kRanks)};
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  Outcome o = out[0];
  for (const Outcome& x : out) {
    EXPECT_EQ(x.path, o.path);
    if (x.wrong >= 0) o.wrong = x.wrong;
  }
  return o;
}

// The plan both sweeps start from: a compute target, a TEE mode and a link model, 64 KiB segments, in
// wall-clock time (the virtual-time paths of emulated runs: tests/comm/test_virtual_time.cpp and
// tests/cli/virtual_time.sh).
TrainOptions host_plan(ComputeMode compute, TeeMode tee, LinkModel link) {
  TrainOptions p;
  p.compute.time = TimeModel::Wall;
  p.compute.mode = compute;
  p.tee.settings.mode = tee;
  p.parallel.link = link;
  p.parallel.segment_kb = 64;
  return p;
}

TEST(GradientPath, EveryCombinationIsRefusedOrBuiltAndSums) {
  int built = 0, refusals = 0, need_mpi = 0;
  for (ComputeMode compute : {ComputeMode::Real, ComputeMode::Emulated}) {
    for (TeeMode tee : {TeeMode::Off, TeeMode::Cc, TeeMode::Fast}) {
      for (AllreduceProvider algo :
           {AllreduceProvider::Ours, AllreduceProvider::Mpi, AllreduceProvider::Nccl}) {
        for (LinkModel link : {LinkModel::Real, LinkModel::Emulate}) {
          TrainOptions p = host_plan(compute, tee, link);
          p.parallel.allreduce = algo;
          const std::string what =
              std::string(name(compute)) + "/" + name(tee) + "/" + name(algo) + "/" + name(link);
          const std::vector<std::string> conflicts = plan_conflicts(p);
          ASSERT_EQ(!conflicts.empty(), refused(p)) << what;
          if (!conflicts.empty()) {
            ++refusals;
            for (const std::string& c : conflicts) EXPECT_EQ(c.find('\n'), std::string::npos) << what;
            EXPECT_THROW(validate(p), InputError) << what;
            continue;
          }
          if (algo == AllreduceProvider::Mpi) {  // in-process ranks have no MPI communicator
            ++need_mpi;
            comm::InprocWorld world(1);
            const auto pf = make_platform(p);
            Profiler prof(false);
            comm::PlainChannel plain;
            try {
              const auto g =
                  build_gradient_path(GradientSetup{p.parallel, p.compute, switches(p), *pf, nullptr,
                                                    world.transport(0), plain, nullptr, 1, prof});
              ADD_FAILURE() << what << ": built without MPI";
            } catch (const InputError& e) {
              EXPECT_NE(std::string(e.what()).find("mpirun"), std::string::npos) << e.what();
            }
            continue;
          }
          ++built;
          const Outcome o = run_path(p);
          EXPECT_EQ(o.path.rfind(expected_path(p, switches(p)), 0), 0u) << what << ": " << o.path;
          // Emulated links carry no payload and an emulated GPU's ring adds are waits: nothing to sum.
          if (link == LinkModel::Real) {
            EXPECT_EQ(o.wrong, -1) << what << ": " << o.path;
          }
        }
      }
    }
  }
  EXPECT_EQ(built, 9);      // real: off/cc/fast; emulated: off/cc/fast over real and emulated links
  EXPECT_EQ(need_mpi, 2);   // MPI_Allreduce: TEE off over real links, real or emulated compute
  EXPECT_EQ(refusals, 25);  // the other 36 - 9 - 2 combinations
}

// --allreduce-algo rd, rhd and auto on every host path the matrix builds (real and emulated compute,
// every TEE mode, real and emulated links): the path names the algorithm, and real payloads sum exactly.
TEST(GradientPath, EveryAlgorithmOnEveryHostPath) {
  int built = 0;
  for (ComputeMode compute : {ComputeMode::Real, ComputeMode::Emulated}) {
    for (TeeMode tee : {TeeMode::Off, TeeMode::Cc, TeeMode::Fast}) {
      for (LinkModel link : {LinkModel::Real, LinkModel::Emulate}) {
        for (const std::optional<comm::ReduceAlgo> algo :
             {std::optional(comm::ReduceAlgo::Rd), std::optional(comm::ReduceAlgo::Rhd),
              std::optional<comm::ReduceAlgo>()}) {
          TrainOptions p = host_plan(compute, tee, link);
          p.parallel.algo = algo;
          if (!plan_conflicts(p).empty()) continue;
          ++built;
          const std::string what =
              std::string(name(compute)) + "/" + name(tee) + "/" + name(link) + "/" + comm::algo_name(algo);
          const Outcome o = run_path(p);
          const std::string title = algo == comm::ReduceAlgo::Rd    ? "recursive doubling"
                                    : algo == comm::ReduceAlgo::Rhd ? "recursive halving-doubling"
                                                                    : "auto (cost model";
          EXPECT_EQ(o.path.rfind(title, 0), 0u) << what << ": " << o.path;
          const std::string rest = expected_path(p, switches(p)).substr(std::string("ring").size());
          EXPECT_NE(o.path.find(rest), std::string::npos) << what << ": " << o.path;
          if (link == LinkModel::Real) {
            EXPECT_EQ(o.wrong, -1) << what << ": " << o.path;
          }
        }
      }
    }
  }
  EXPECT_EQ(built, 27);  // the matrix's 9 host paths x 3 algorithms
  // Our algorithms only: a vendor all-reduce has no --allreduce-algo.
  TrainOptions mpi;
  mpi.parallel.allreduce = AllreduceProvider::Mpi;
  mpi.parallel.algo = comm::ReduceAlgo::Rd;
  EXPECT_THROW(validate(mpi), InputError);
  // The device ring of --device cuda (TEE off or device crypto) is a ring.
  TrainOptions gpu;
  gpu.compute.device = DeviceKind::Cuda;
  gpu.parallel.algo = std::nullopt;  // auto
  EXPECT_THROW(validate(gpu), InputError);
  gpu.tee.settings.mode = TeeMode::Cc;  // staged through the host ring: every algorithm
  EXPECT_TRUE(plan_conflicts(gpu).empty());
}

// cc's per-crossing cost applies to a ring sealed on the host, only with emulated GPUs.
TEST(GradientPath, CcTransferCostWrapsOnlyAHostSealedRing) {
  TrainOptions p;
  p.compute.mode = ComputeMode::Emulated;
  p.tee.settings.mode = TeeMode::Cc;
  p.parallel.cc_transfer_us = 100;
  EXPECT_TRUE(plan_conflicts(p).empty());
  EXPECT_NE(run_path(p).path.find("cc transfers"), std::string::npos) << run_path(p).path;
  p.tee.settings.mode = TeeMode::Fast;  // sealed on the (emulated) GPU: no bounce buffer to cross
  EXPECT_EQ(run_path(p).path.find("cc transfers"), std::string::npos);
  p.compute.mode = ComputeMode::Real;
  EXPECT_FALSE(plan_conflicts(p).empty());
}

// A platform whose gradients live in device memory, as a real GPU's do, over the CPU backend: what the
// table does with the device's rows and with host rows that must stage, without a GPU.
class DeviceMemoryPlatform final : public platform::Platform {
 public:
  DeviceMemoryPlatform() : cpu_(platform::platform_entry(DeviceKind::Cpu).make({})) {}
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  Backend& backend() override { return cpu_->backend(); }
  bool real_values() const override { return true; }
  bool device_gradients() const override { return true; }
  platform::HostPathParts host_path(const platform::HostPathRequest& r) override {
    return cpu_->host_path(r);
  }

 private:
  std::unique_ptr<platform::Platform> cpu_;
};

// Each of kRanks in-process ranks builds p's path on a GPU's (device-memory) gradients over a sealed
// channel and runs `use(path, rank)`; checks that the path staged through the host. Rethrows a rank's
// failure.
template <class Use>
void on_staged_ranks(const TrainOptions& p, Use use) {
  const TeeSwitches ts = switches(p);
  comm::InprocWorld world(kRanks);
  const auto errors = world.run([&](comm::Transport& t) {
    const int r = t.rank();
    DeviceMemoryPlatform gpu;
    Profiler prof(false);
    comm::SealedChannel sealed(comm::SealedChannelOptions{r, kRanks}, keys(r), &prof);
    const auto g = build_gradient_path(
        GradientSetup{p.parallel, p.compute, ts, gpu, nullptr, t, sealed, &sealed, 1, prof});
    use(*g, r);
    EXPECT_GT(prof.phase_totals()[static_cast<std::size_t>(Phase::Stage)], 0.0);
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Which row of the table serves a plan, on a platform, with or without mpirun.
std::string served(const TrainOptions& p, platform::Platform& pf, bool needs_mpi, int ranks = 2) {
  comm::InprocWorld world(ranks);
  Profiler prof(false);
  comm::PlainChannel plain;
  const TeeSwitches ts = switches(p);
  const GradientSetup s{p.parallel, p.compute, ts, pf, nullptr, world.transport(0), plain, nullptr, 1, prof};
  const PathRequest r = path_request(s);
  const GradientPathEntry& row = served_by(r);
  // Null mpi (in-process ranks): the rows that need mpirun say so; the others can run.
  EXPECT_EQ(path_conflicts(r).empty(), !needs_mpi) << row.name;
  return row.name;
}

TEST(GradientPaths, TheTableServesEachPlanFromOneRow) {
  const auto cpu = platform::platform_entry(DeviceKind::Cpu).make({});
  DeviceMemoryPlatform gpu;
  TrainOptions p;
  EXPECT_EQ(served(p, *cpu, false), "host");
  EXPECT_EQ(served(p, gpu, true), "device ring");  // tee off on device memory
  p.tee.settings.mode = TeeMode::Cc;               // cc stages through the host ring
  EXPECT_EQ(served(p, gpu, false), "host");
  p.tee.settings.mode = TeeMode::Off;
  EXPECT_EQ(served(p, gpu, false, /*ranks=*/1), "host");  // one rank: nothing to ring
  p.parallel.allreduce = AllreduceProvider::Mpi;
  EXPECT_EQ(served(p, *cpu, true), "mpi");
  p.parallel.allreduce = AllreduceProvider::Nccl;
  p.compute.device = DeviceKind::Cuda;  // as the plan asks (the device memory is the test platform's)
  EXPECT_EQ(served(p, gpu, true), "nccl");
  // Every row has its own name.
  std::set<std::string> names;
  for (const GradientPathEntry& r : gradient_paths()) names.insert(r.name);
  EXPECT_EQ(names.size(), gradient_paths().size());
}

// A row's conflicts are the same sentences whether the run plan asks (options only) or the engine
// builds (a setup): the table is the one place they live.
TEST(GradientPaths, ThePlanRefusesWhatTheRowsRefuse) {
  TrainOptions p;
  p.parallel.allreduce = AllreduceProvider::Mpi;
  p.tee.settings.mode = TeeMode::Cc;
  p.parallel.algo = comm::ReduceAlgo::Rd;
  const std::vector<std::string> plan = plan_conflicts(p);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_NE(plan[0].find("--allreduce mpi sends gradients in plaintext"), std::string::npos) << plan[0];
  EXPECT_NE(plan[1].find("--allreduce-algo rd chooses among teetrain's own algorithms"), std::string::npos)
      << plan[1];
  EXPECT_EQ(path_conflicts(request_of(p, false)), plan);
}

TEST(GradientPaths, RowsThatNeedMpirunSaySo) {
  DeviceMemoryPlatform gpu;
  comm::InprocWorld world(2);
  Profiler prof(false);
  comm::PlainChannel plain;
  for (AllreduceProvider a : {AllreduceProvider::Ours, AllreduceProvider::Mpi, AllreduceProvider::Nccl}) {
    TrainOptions p;
    p.parallel.allreduce = a;
    const TeeSwitches ts = switches(p);
    try {
      const auto g = build_gradient_path(GradientSetup{p.parallel, p.compute, ts, gpu, nullptr,
                                                       world.transport(0), plain, nullptr, 1, prof});
      ADD_FAILURE() << name(a) << ": built without MPI";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("needs ranks started by mpirun"), std::string::npos) << e.what();
    }
  }
}

// A host row on a platform whose gradients live in device memory is staged through the host, and still
// sums exactly; on the cpu platform it is not staged.
TEST(GradientPaths, HostRowsStageDeviceGradients) {
  TrainOptions p;
  p.tee.settings.mode = TeeMode::Cc;  // the host ring (the device ring serves --tee off)
  std::vector<std::string> paths(kRanks);
  std::vector<long> wrong(kRanks, -2);
  on_staged_ranks(p, [&](GradientPath& g, int r) {
    std::vector<float> v = pattern_buffer(kCount, r);
    g.sum(v.data(), v.size(), 1, 0);
    paths[static_cast<std::size_t>(r)] = g.describe();
    wrong[static_cast<std::size_t>(r)] = first_wrong(v, kRanks);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(paths[static_cast<std::size_t>(r)].rfind("host staging, ring over inproc, sealed(", 0), 0u)
        << paths[static_cast<std::size_t>(r)];
    EXPECT_EQ(wrong[static_cast<std::size_t>(r)], -1);
  }
  EXPECT_EQ(run_path(p).path.find("host staging"), std::string::npos);  // the cpu platform does not stage
}

// --shard on a GPU's gradients: the plan no longer refuses it (the device ring serves --tee off and fast,
// the host row staged serves cc); only the vendor all-reduces, which have no halves, stay refused, with a
// sentence saying what to use.
TEST(GradientPaths, ShardRunsOnDeviceGradientsExceptUnderAVendorAllreduce) {
  for (const ShardStage stage : {ShardStage::Optimizer, ShardStage::Gradients, ShardStage::Params}) {
    for (const TeeMode tee : {TeeMode::Off, TeeMode::Cc, TeeMode::Fast}) {
      TrainOptions p;
      p.compute.device = DeviceKind::Cuda;
      p.parallel.shard = stage;
      p.tee.settings.mode = tee;
      EXPECT_TRUE(path_conflicts(request_of(p, true)).empty()) << name(stage) << "/" << name(tee);
    }
    TrainOptions p;
    p.compute.device = DeviceKind::Cuda;
    p.parallel.shard = stage;
    p.parallel.allreduce = AllreduceProvider::Nccl;
    // (A build without CUDA refuses --device cuda besides: the plan names every conflict.)
    int shard_conflicts = 0;
    for (const std::string& c : plan_conflicts(p)) {
      if (c.find("--shard") == std::string::npos) continue;
      ++shard_conflicts;
      EXPECT_NE(c.find("--allreduce nccl has none: use --allreduce ring"), std::string::npos) << c;
    }
    EXPECT_EQ(shard_conflicts, 1) << name(stage);
  }
}

// cc on a GPU's gradients: the staged host row splits too. Its reduce-scatter leaves each rank its chunk
// of the sum and its all-gather every chunk, bit for bit the staged all-reduce's, each half crossing
// through the host (the `stage` phase).
TEST(GradientPaths, StagedHostRowReduceScattersAndAllGathers) {
  TrainOptions p;
  p.tee.settings.mode = TeeMode::Cc;
  p.parallel.shard = ShardStage::Gradients;
  std::vector<long> wrong(kRanks, -2);
  std::vector<char> shards(kRanks, 0);  // not vector<bool>: the ranks' threads write their own element
  on_staged_ranks(p, [&](GradientPath& g, int r) {
    shards[static_cast<std::size_t>(r)] = g.shards() ? 1 : 0;
    std::vector<float> v = pattern_buffer(kCount, r);
    g.reduce_scatter(v.data(), v.size(), 1, 0);
    g.all_gather(v.data(), v.size(), 1, 0);
    wrong[static_cast<std::size_t>(r)] = first_wrong(v, kRanks);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(shards[static_cast<std::size_t>(r)], 1);
    EXPECT_EQ(wrong[static_cast<std::size_t>(r)], -1);
  }
}

}  // namespace
}  // namespace tt
