// Platform: the compute target a run is on — cpu, cuda or emulated — chosen once from the run plan
// (engine/run/training_run.cpp). Each supplies in one place what differs between them: its backend,
// whether the values it computes are real, its host ring's memory, channel and links (the emulated
// GPU's device crypto, payload-free links, modelled adds, modelled host sealing and bounce-buffer
// crossings: platform/emulated/), and the run choices it refuses (platforms(): a table). The engine asks
// the platform and never tests which one it has.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/reduce_memory.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport.h"
#include "core/backend.h"
#include "core/emulated/emulated_gpu.h"
#include "core/profiler.h"
#include "core/run_clock.h"
#include "platform/emulated/virtual_seal_channel.h"

namespace tt::platform {

// The run's choices a platform may refuse (engine/run/run_plan.cpp fills it from the plan).
struct Request {
  bool emulated_links = false;  // --link emulate
  bool virtual_time = false;    // --time virtual, as asked
  double cc_transfer_us = 0;    // --cc-transfer-us
  bool cc_hardware = false;     // --cc-hardware other than none
  bool checkpoints = false;     // --save-every or --resume
  bool tf32 = false;            // --tf32
  // --adversary on a ring whose gradients fast seals "on the GPU" in wall-clock time.
  bool adversary_on_device_crypto = false;
};

// What building a platform needs.
struct Options {
  int threads = 1;                 // CPU threads of the backend
  int rank = 0;                    // cuda: the GPU is rank % visible GPUs
  bool tf32 = false;               // cuda: TF32 tensor-core matmuls
  std::optional<EmulatedGpu> gpu;  // emulated: the modelled GPU
  RunClock* clock = nullptr;       // emulated: the run's clock (virtual: ops advance it)
};

// What the host ring (our algorithms on host buffers) needs of the run. References outlive the ring.
struct HostPathRequest {
  comm::Transport& transport;   // the run's wire: MPI, or --adversary's decorator on it
  comm::Channel& channel;       // every inter-rank message's channel (sealed in TEE mode)
  comm::SealedChannel* sealed;  // the same channel when sealed, else null
  bool tee = false;             // TEE mode: the ring's messages are sealed
  bool device_crypto = false;   // fast seals gradients on the GPU
  bool forward_ag = false;      // forward-ciphertext all-gather
  bool emulated_links = false;  // --link emulate
  double link_gbps = 0;         // --link-gbps (0: none)
  double cc_transfer_us = 0;    // --cc-transfer-us
  int model_ranks = 0;          // the ring's modelled size when folded, for the links' label (Note [Folded
                                // ring]; 0: the transport's)
  // The modelled host's (or GPU's) sealing of an emulated GPU's messages in virtual time.
  std::function<CryptoCostModel(const EmulatedGpu&)> crypto;
  Profiler& profiler;  // its clock is virtual in virtual time
};

// The host ring's parts on a platform: the channel its messages go through, the wire they cross and
// the memory its scratch and adds live in.
struct HostPathParts {
  comm::Channel& channel;
  comm::Transport& wire;
  comm::ReduceMemory& memory;
};

class Platform {
 public:
  Platform() = default;
  virtual ~Platform() = default;
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  virtual DeviceKind kind() const = 0;
  virtual Backend& backend() = 0;
  // True when parameters and gradients hold real numbers: drawn, broadcast and digested. An emulated
  // GPU's memory holds placeholders (zeros): nothing of it is worth drawing or comparing.
  virtual bool real_values() const = 0;
  // True when gradients live in device memory the host cannot read (a real GPU): a path on host
  // buffers stages them through the host, and the device ring can run on them
  // (engine/gradients/gradient_paths.h). An emulated GPU's buffers are host memory; its crossings are the
  // host ring's channel's to model.
  virtual bool device_gradients() const { return false; }
  // The modelled GPU (its spec and rates: the cost model, the summary), or null on real hardware.
  virtual const EmulatedGpu* modelled_gpu() const { return nullptr; }
  // What rank 0 announces about the platform before training ("" for none).
  virtual std::string notice(const std::string& /*model*/, bool /*virtual_time*/) const { return {}; }
  // The host ring's channel, wire and memory; called once.
  virtual HostPathParts host_path(const HostPathRequest& r) = 0;
  // --cc-transfer-us as applied to the host ring (0 when its messages never cross a bounce buffer).
  virtual double cc_transfer_us() const { return 0.0; }
  // What a GPU in CC mode (--cc-hardware) added to the compute stream so far: kernel launches and
  // host <-> device copies, the batch's included (seconds; zero on real hardware and with CC off).
  struct CcCharges {
    double launch_s = 0;
    double copy_s = 0;
    double sm_wait_s = 0;  // compute waiting for the GPU's AES-GCM kernels (Note [GPU crypto shares the SMs])
  };
  virtual CcCharges cc_charges() const { return {}; }
};

// One row of the platform table: its name, the choices it refuses (each a sentence saying what to
// do, appended to `out`) and how it is built.
struct PlatformEntry {
  DeviceKind kind;
  const char* name;
  void (*refuse)(const Request& r, std::vector<std::string>& out);
  std::unique_ptr<Platform> (*make)(const Options& o);
};
std::span<const PlatformEntry> platforms();
const PlatformEntry& platform_entry(DeviceKind kind);

}  // namespace tt::platform
