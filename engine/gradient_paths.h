// The ways a run can sum its gradient buckets across ranks, as a table (the nccl-tests shape: one
// struct per path, one driver). Each row names the path, says when the plan asks for it, which
// conflicts make it impossible (each a sentence saying what to do) and how it is built; `train`'s
// GradientReduction and `bench allreduce` both select from it.
//
//   nccl         --allreduce nccl: ncclAllReduce on the GPU buffers (vendor baseline)
//   device ring  --allreduce ring where the platform keeps gradients in device memory, with --tee off
//                or fast's device crypto: GPU to GPU, sealed with the GPU AES-GCM (device_allreduce.h)
//   mpi          --allreduce mpi: MPI_Allreduce on host buffers
//   host         --allreduce ring otherwise: our algorithms on host buffers (--allreduce-algo: ring,
//                recursive doubling, halving-doubling, or the cost model's pick per bucket:
//                allreduce_selection.h) over the channel, links and memory the platform gives them
//                (platform/platform.h: Platform::host_ring), sealed in TEE mode
//
// A row that sums host buffers, on a platform whose gradients live in device memory, is staged: each
// bucket is copied to the host, summed, and copied back (H100 CC's bounce-buffer path, the `stage`
// phase).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/mpi_transport.h"
#include "comm/ring_allreduce.h"
#include "comm/sealed_channel.h"
#include "core/profiler.h"
#include "engine/allreduce_selection.h"
#include "engine/ddp_reducer.h"
#include "engine/ring_segments.h"
#include "engine/run_choices.h"
#include "platform/platform.h"

namespace tt {

// The ring's options for a TEE mode: cc seals each chunk whole (no pipelining) and re-seals at every
// all-gather hop, as H100 CC does; fast cuts segments and forwards the owner's ciphertext. `train`
// and `bench allreduce` both take their ring from here.
comm::RingOptions ring_options(const TeeSwitches& ts, std::size_t segment_bytes);

// What a gradient path is built from. Every reference must outlive the path.
struct GradientSetup {
  const ParallelOptions& parallel;  // which path, its algorithm, segments and links
  const ComputeOptions& compute;    // virtual time and the modelled host (auto's cost model)
  const TeeSwitches& tee;
  platform::Platform& platform;  // its backend holds the gradients; its host ring's parts
  comm::MpiTransport* mpi;       // MPI_Allreduce, NCCL's bootstrap and the device ring (null: host ring only)
  comm::Transport& transport;    // the host ring's wire: `mpi`, or --adversary's decorator on it
  comm::Channel& channel;        // every inter-rank message's channel (sealed in TEE mode)
  comm::SealedChannel* sealed;   // the same channel when sealed, else null
  int ranks_on_host = 1;
  Profiler& profiler;
  std::size_t shm_inline_bytes = 0;  // ShmTransport's inline limit when it links this host's ranks
};

// The transport between this setup's ranks, agreed over them when they run under mpirun (collective):
// its eager limit sets the automatic segments (engine/ring_segments.h) and auto's default model.
RingTransport ring_link(const GradientSetup& s);

// One path as built: sums a bucket in place across ranks.
class GradientPath {
 public:
  GradientPath() = default;
  virtual ~GradientPath() = default;
  GradientPath(const GradientPath&) = delete;
  GradientPath& operator=(const GradientPath&) = delete;

  // In-place sum of g[0, n) over every rank; `step` and `bucket` label the messages.
  virtual void sum(float* g, std::size_t n, long step, int bucket) = 0;
  // The run banner's `gradients` line, the summary's `gradient_path`.
  virtual std::string describe() const = 0;
  // The ring's segments as cut (bytes 0: whole chunks) and why, or nullopt where the path cuts none of
  // ours (MPI, NCCL).
  virtual std::optional<SegmentPick> segment() const { return std::nullopt; }
  // Our host algorithms' per-bucket choice (null on other paths).
  virtual AlgoSelection* selection() { return nullptr; }
};

enum class GradientPathKind : std::uint8_t { Nccl, DeviceRing, Mpi, Host };

struct GradientPathEntry {
  GradientPathKind kind;
  const char* name;
  bool host_buffers;  // sums host buffers: staged where the platform keeps gradients in device memory
  bool (*asked)(const GradientSetup& s);  // the plan asks for this path (the first such row serves it)
  void (*refuse)(const GradientSetup& s, std::vector<std::string>& out);  // what makes it impossible
  std::unique_ptr<GradientPath> (*build)(const GradientSetup& s);
};
std::span<const GradientPathEntry> gradient_paths();
const GradientPathEntry& gradient_path(GradientPathKind kind);  // the row of a kind

// The row that serves the setup's plan. Throws InputError naming every conflict when it cannot run.
const GradientPathEntry& select_gradient_path(const GradientSetup& s);
// The selected row, built (and staged through host memory when it needs to be).
std::unique_ptr<GradientPath> build_gradient_path(const GradientSetup& s);
// A given row, built and staged as build_gradient_path would (bench allreduce runs several side by side).
std::unique_ptr<GradientPath> build_gradient_path(const GradientPathEntry& row, const GradientSetup& s);

}  // namespace tt
