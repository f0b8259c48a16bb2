// The ways a run can sum its gradient buckets across ranks, as a table (the nccl-tests shape: one
// struct per path, one driver). Each row names the path, says when a run asks for it, which choices
// make it impossible (each a sentence saying what to do: the run plan refuses them before anything is
// built, and the engine again when it builds) and how it is built; `train` and `bench allreduce` both
// take their paths from here.
//
//   nccl         --allreduce nccl: ncclAllReduce on the GPU buffers (vendor baseline)
//   device ring  --allreduce ring where the platform keeps gradients in device memory, with --tee off
//                or fast's device crypto: GPU to GPU, sealed with the GPU AES-GCM (device_ring_path.h)
//   mpi          --allreduce mpi: MPI_Allreduce on host buffers
//   host         --allreduce ring otherwise: our algorithms on host buffers (--allreduce-algo: ring,
//                recursive doubling, halving-doubling, or the cost model's pick per bucket:
//                allreduce_selection.h) over the channel, links and memory the platform gives them
//                (platform/platform.h: Platform::host_path), sealed in TEE mode
//
// A row that sums host buffers, on a platform whose gradients live in device memory, is staged: each
// bucket is copied to the host, summed, and copied back (H100 CC's bounce-buffer path, the `stage`
// phase).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/allreduce/ring_allreduce.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport/mpi_transport.h"
#include "core/profiler.h"
#include "engine/gradients/gradient_path.h"
#include "engine/gradients/segments.h"
#include "engine/run_choices.h"
#include "platform/platform.h"

namespace tt {

class AlgoPrices;  // engine/gradients/allreduce_selection.h

// The ring's options for a TEE mode: cc seals each chunk whole (no pipelining) and re-seals at every
// all-gather hop, as H100 CC does; fast cuts segments and forwards the owner's ciphertext. `train`
// and `bench allreduce` both take their ring from here.
comm::RingOptions ring_options(const TeeSwitches& ts, std::size_t segment_bytes);

// What choosing a path looks at: the run's options and where its gradients live, all known before
// anything is built, so the run plan checks exactly what the engine later builds from.
struct PathRequest {
  const ParallelOptions& parallel;
  const ComputeOptions& compute;
  TeeSwitches tee;                // resolved (engine/run_choices.h: resolve_tee)
  bool adversary = false;         // --adversary sits on the host wire
  bool device_gradients = false;  // in memory the host cannot read (a real GPU's)
  bool mpirun = true;             // ranks started by mpirun (an MPI communicator)
  bool several_ranks = true;      // more than one rank sums
};

// What a gradient path is built from. Every reference must outlive the path.
struct GradientSetup {
  const ParallelOptions& parallel;  // which path, its algorithm, segments and links
  const ComputeOptions& compute;    // virtual time and the modelled host (auto's cost model)
  const TeeSwitches& tee;
  platform::Platform& platform;  // its backend holds the gradients; its host path's parts
  comm::MpiTransport* mpi;       // MPI_Allreduce, NCCL's bootstrap and the device ring (null: host path only)
  comm::Transport& transport;    // the host path's wire: `mpi`, or --adversary's decorator on it
  comm::Channel& channel;        // every inter-rank message's channel (sealed in TEE mode)
  comm::SealedChannel* sealed;   // the same channel when sealed, else null
  int ranks_on_host = 1;
  Profiler& profiler;
  // The link between the ranks as they agreed on it (segments.h: agreed_link, a collective the
  // caller runs where it can be seen); its eager limit sets the automatic segments and auto's model.
  LinkFacts link{};
  bool adversary = false;                        // --adversary sits on `transport`
  std::shared_ptr<AlgoPrices> prices = nullptr;  // shared with the run's ranks in this process (RunServices)
};

// The request a setup makes (what its rows are asked and refused by).
PathRequest path_request(const GradientSetup& s);

struct GradientPathEntry {
  const char* name;
  bool host_buffers;  // sums host buffers: staged where the platform keeps gradients in device memory
  bool (*asked)(const PathRequest& r);  // the run asks for this path (the first such row serves it)
  // What makes it impossible, each a sentence saying what to do, appended to `out`.
  void (*refuse)(const PathRequest& r, std::vector<std::string>& out);
  std::unique_ptr<GradientPath> (*build)(const GradientSetup& s);
};
std::span<const GradientPathEntry> gradient_paths();

// The row that serves a request (every request is served by one).
const GradientPathEntry& served_by(const PathRequest& r);
// What the serving row refuses of the request (empty: it can run).
std::vector<std::string> path_conflicts(const PathRequest& r);
// The serving row, built (and staged through host memory when it needs to be). Throws InputError
// naming every conflict when it cannot run.
std::unique_ptr<GradientPath> build_gradient_path(const GradientSetup& s);

}  // namespace tt
