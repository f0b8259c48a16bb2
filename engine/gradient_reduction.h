// How a training run sums a step's gradient buckets across ranks (engine/run_plan.h decides): one AllreduceFn
// for the reducer, chosen once from the options, and a one-line description of the path it takes (the run
// banner's `gradients` line, the summary's `gradient_path`).
//
//   --allreduce nccl                         ncclAllReduce on GPU buffers (vendor baseline)
//   --device cuda, --tee off | fast+device   the device ring (device_allreduce.h): GPU to GPU, fast
//                                            sealing with the GPU AES-GCM
//   --allreduce mpi                          MPI_Allreduce on host buffers
//   otherwise                                our algorithms on host buffers (--allreduce-algo: the ring,
//                                            recursive doubling, halving-doubling, or the cost model's
//                                            pick per bucket: allreduce_selection.h), through the
//                                            sealed channel in TEE mode; GPU buckets are staged through
//                                            host memory (H100 CC's bounce-buffer path, the `stage` phase)
//
// Our host algorithms run over the channel, links and memory the run's platform gives them
// (platform/platform.h: Platform::host_ring): on cpu and cuda the run's channel over real links (paced
// at --link-gbps), on the emulated platform the emulated GPU's device crypto, modelled links and adds,
// and in virtual time sealed tokens with modelled crypto (platform/emulated/).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/allreduce_algo.h"
#include "comm/mpi_transport.h"
#include "comm/ring_allreduce.h"
#include "comm/sealed_channel.h"
#include "core/backend.h"
#include "core/profiler.h"
#include "engine/allreduce_selection.h"
#include "engine/ddp_reducer.h"
#include "engine/device_allreduce.h"
#include "engine/nccl_allreduce.h"
#include "engine/run_plan.h"
#include "platform/platform.h"

namespace tt {

// The ring's options for a TEE mode: cc seals each chunk whole (no pipelining) and re-seals at every
// all-gather hop, as H100 CC does; fast cuts segments and forwards the owner's ciphertext. `train`
// and `bench allreduce` both take their ring from here.
comm::RingOptions ring_options(const TeeSwitches& ts, int segment_kb);

struct GradientSetup {
  const RunPlan& plan;
  const TeeSwitches& tee;
  platform::Platform& platform;  // its backend holds the gradients; its host ring's parts
  comm::MpiTransport* mpi;       // MPI_Allreduce, NCCL's bootstrap and the device ring (null: host ring only)
  comm::Transport& transport;    // the host ring's wire: `mpi`, or --adversary's decorator on it
  comm::Channel& channel;        // every inter-rank message's channel (sealed in TEE mode)
  comm::SealedChannel* sealed;   // the same channel when sealed, else null
  int ranks_on_host = 1;
  Profiler& profiler;
};

class GradientReduction {
 public:
  // Every reference in `s` must outlive this object. Throws InputError when the plan needs MPI and
  // `s.mpi` is null (in-process ranks).
  explicit GradientReduction(const GradientSetup& s);
  GradientReduction(const GradientReduction&) = delete;
  GradientReduction& operator=(const GradientReduction&) = delete;

  const AllreduceFn& fn() const { return fn_; }
  const std::string& path() const { return path_; }
  // --cc-transfer-us as applied to the ring (0 when the ring is not sealed on the host).
  double cc_transfer_us() const { return platform_.cc_transfer_us(); }
  // Our host algorithms: what each bucket took and why (AlgoSelection::summary); null on other paths.
  nlohmann::json selection() const { return selection_ ? selection_->summary() : nlohmann::json(nullptr); }

 private:
  void host_ring(const GradientSetup& s, comm::RingOptions ro);

  platform::Platform& platform_;
  std::optional<comm::Allreducer> algos_;
  std::optional<AlgoSelection> selection_;
  std::unique_ptr<DeviceAllreduce> device_ring_;
  std::unique_ptr<NcclAllreduce> nccl_;
  std::vector<float> staging_;  // (largest bucket,) floats: GPU buckets on their way through the host ring
  AllreduceFn fn_;
  std::string path_;
};

}  // namespace tt
