// The typed choices a run is made of, as enums (the CLI parses names into them once; nothing
// downstream compares strings), the TEE policy that resolves fast's and cc's switches, and the two parts
// of a run's options that the pieces below the training run take whole: where the model computes
// (ComputeOptions: the platform) and how the ranks average gradients (ParallelOptions: the gradient path).
// engine/run/train_options.h groups every part; engine/run/run_plan.h resolves and validates them once.
//
// Names (name()/parse_*) are the command line's spellings; summaries and the configuration agreement
// print them, so a run's JSON reads as its command line.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "comm/allreduce/allreduce_algo.h"
#include "comm/transport.h"
#include "comm/transport/shared_buffer.h"
#include "core/backend.h"
#include "core/emulated/emulated_gpu.h"
#include "core/enum_names.h"
#include "engine/lr_schedule.h"
#include "engine/optimizer.h"
#include "platform/emulated/virtual_seal_channel.h"
#include "tee/crypto/aead.h"

namespace tt {

enum class ComputeMode { Real, Emulated };  // emulated: forward/backward are waits on an emulated GPU
// Who sums the gradients: teetrain's own algorithms (spelled "ring" on the command line and in
// configurations; --allreduce-algo says which of them), or a vendor baseline.
enum class AllreduceProvider { Ours, Mpi, Nccl };
enum class LinkModel { Real, Emulate };  // emulate: plaintext ring payloads are not moved
enum class TeeMode { Off, Cc, Fast };
// What each rank keeps of the training state (--shard; Note [Shard layout], engine/gradients/shard.h):
// everything (DDP), its shard of the optimizer state (ZeRO-1), of the averaged gradients (ZeRO-2), and of
// the parameters between their uses (ZeRO-3; Note [Parameter units], core/model.h).
enum class ShardStage { None, Optimizer, Gradients, Params };
// How a checkpoint is laid out: whole (DDP's layout, rank 0 writes it all) or sharded (each rank writes its
// own shard beside rank 0's files, under one manifest; engine/checkpoint/shard_manifest.h).
enum class CkptLayout { Whole, Sharded };
enum class Toggle { Auto, On, Off };  // Auto: the TEE mode's default
// How an emulated run's time is had: computed (Note [Virtual time], core/run_clock.h) or measured
// with the wall clock while ops wait. Auto: virtual for --compute emulate; real compute is always measured.
enum class TimeModel { Auto, Virtual, Wall };

// The spellings each enum accepts (core/enum_names.h), in the order help texts list them.
template <>
struct EnumNames<ComputeMode> {
  static constexpr std::pair<const char*, ComputeMode> all[] = {{"real", ComputeMode::Real},
                                                                {"emulate", ComputeMode::Emulated}};
};
template <>
struct EnumNames<AllreduceProvider> {
  static constexpr std::pair<const char*, AllreduceProvider> all[] = {
      {"ring", AllreduceProvider::Ours}, {"mpi", AllreduceProvider::Mpi}, {"nccl", AllreduceProvider::Nccl}};
};
template <>
struct EnumNames<LinkModel> {
  static constexpr std::pair<const char*, LinkModel> all[] = {{"real", LinkModel::Real},
                                                              {"emulate", LinkModel::Emulate}};
};
template <>
struct EnumNames<TimeModel> {
  static constexpr std::pair<const char*, TimeModel> all[] = {
      {"auto", TimeModel::Auto}, {"virtual", TimeModel::Virtual}, {"wall", TimeModel::Wall}};
};
template <>
struct EnumNames<TeeMode> {
  static constexpr std::pair<const char*, TeeMode> all[] = {
      {"off", TeeMode::Off}, {"cc", TeeMode::Cc}, {"fast", TeeMode::Fast}};
};
template <>
struct EnumNames<ShardStage> {
  static constexpr std::pair<const char*, ShardStage> all[] = {{"none", ShardStage::None},
                                                               {"optimizer", ShardStage::Optimizer},
                                                               {"gradients", ShardStage::Gradients},
                                                               {"params", ShardStage::Params}};
};
template <>
struct EnumNames<CkptLayout> {
  static constexpr std::pair<const char*, CkptLayout> all[] = {{"sharded", CkptLayout::Sharded},
                                                               {"whole", CkptLayout::Whole}};
};
template <>
struct EnumNames<Toggle> {
  static constexpr std::pair<const char*, Toggle> all[] = {
      {"auto", Toggle::Auto}, {"on", Toggle::On}, {"off", Toggle::Off}};
};
template <>
struct EnumNames<comm::WaitMode> {
  static constexpr std::pair<const char*, comm::WaitMode> all[] = {{"adaptive", comm::WaitMode::Adaptive},
                                                                   {"busy", comm::WaitMode::Busy}};
};
template <>
struct EnumNames<comm::HostTransport> {
  static constexpr std::pair<const char*, comm::HostTransport> all[] = {{"shm", comm::HostTransport::Shm},
                                                                        {"mpi", comm::HostTransport::Mpi}};
};
template <>
struct EnumNames<comm::BufferMemory> {
  static constexpr std::pair<const char*, comm::BufferMemory> all[] = {
      {"shared", comm::BufferMemory::Shared}, {"private", comm::BufferMemory::Private}};
};
template <>
struct EnumNames<OptimizerKind> {
  static constexpr std::pair<const char*, OptimizerKind> all[] = {{"adamw", OptimizerKind::AdamW},
                                                                  {"sgd", OptimizerKind::Sgd}};
};
template <>
struct EnumNames<ScheduleKind> {
  static constexpr std::pair<const char*, ScheduleKind> all[] = {{"cosine", ScheduleKind::Cosine},
                                                                 {"constant", ScheduleKind::Constant}};
};
template <>
struct EnumNames<DeviceKind> {
  static constexpr std::pair<const char*, DeviceKind> all[] = {{"cpu", DeviceKind::Cpu},
                                                               {"cuda", DeviceKind::Cuda}};
};
template <>
struct EnumNames<tee::Cipher> {
  static constexpr const auto& all = tee::kCipherNames;  // tee/crypto/aead.h: the names seal-data takes too
};

// A choice's command-line spelling (the EnumNames table above): what summaries and banners print.
template <typename E>
requires requires {
  EnumNames<E>::all;
}
const char* name(E choice) {
  return enum_name(choice);
}

// The TEE flags as given (Toggle::Auto: the mode's default).
struct TeeSettings {
  TeeMode mode = TeeMode::Off;
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
  std::uint64_t rekey_mb = 65536;        // rotate link keys after this many MiB sealed per stream
  Toggle pipeline = Toggle::Auto;        // segment pipelining inside ring chunks
  Toggle forward_ag = Toggle::Auto;      // forward-ciphertext all-gather (owner seals once)
  int crypto_threads = 0;                // 0: mode default (cc 1, fast 2)
  Toggle direct_ingress = Toggle::Auto;  // open batches once (fast) vs the bounce path (cc)
  Toggle device_crypto = Toggle::Auto;   // seal/open gradients on the (emulated) GPU
};

// The switches in force after resolving Auto against the mode. cc emulates H100 CC as Lee et al.
// measured it (all off); fast is our TEE-aware design (all on).
struct TeeSwitches {
  bool on = false;
  bool cc = false;
  bool pipeline = false;
  bool forward_ag = false;
  int crypto_threads = 1;
  bool direct_ingress = true;
  bool device_crypto = false;  // only where gradients live on a GPU
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;

  // The mode these switches resolve (cc's are Lee et al.'s; any other sealing mode is fast's).
  TeeMode mode() const { return !on ? TeeMode::Off : cc ? TeeMode::Cc : TeeMode::Fast; }
};

// gpu_gradients: the gradients live on a GPU (real or emulated). Device crypto exists only there: with
// CPU compute the host IS the device, and the switch resolves to off. Throws InputError for device
// crypto asked of a cipher the GPU does not run (tee_conflict's sentence).
TeeSwitches resolve_tee(const TeeSettings& s, bool gpu_gradients);
// The switches as resolve_tee gives them, where a conflict leaves device crypto off instead of throwing:
// for whoever lists every conflict at once (the run plan) and asks tee_conflict for this one.
TeeSwitches resolve_tee_lenient(const TeeSettings& s, bool gpu_gradients);
// The one conflict among the TEE flags themselves (device crypto asked of ChaCha on a GPU), or "".
std::string tee_conflict(const TeeSettings& s, bool gpu_gradients);

// The host of an emulated GPU's confidential VM in virtual time: what sealing the ring's messages costs
// there (platform/emulated/virtual_seal_channel.h). Defaults: tools/calibration/h100_cc_sources.json.
struct HostModel {
  double aead_gbps = platform::kModelledHostAeadGbps;  // one core's AES-256-GCM, GB/s
  int crypto_cores = 0;           // cores sealing for one rank (0: the mode's --crypto-threads)
  double message_us = 0;          // software cost per sealed or opened message
  bool bounce_reencrypt = false;  // the bounce buffers' bytes are encrypted a second time on the host
};

// Where forward and backward run: --device (and --tf32, --threads), or an emulated GPU
// (--compute emulate, --gpu*, its time model and modelled host). The platform is built from this part
// (platform/platform.h).
struct EmulatedGpuOptions {
  std::string name = "h100";  // a table name or a platform profile FILE.json (resolve_gpu_spec)
  GpuPrecision precision = GpuPrecision::Tf32;
  double tflops = 0;        // override the peak (0: table)
  double efficiency = 0;    // override the matmuls' fraction of peak (0: table)
  double act_traffic = -1;  // element-wise traffic per byte (< 0: table)
  double aead_gbps = 0;     // the GPU's AES-GCM rate (0: table)
  // --cc-hardware: the GPU's CC mode in TEE runs (Note [CC hardware costs], core/emulated/emulated_gpu.h)
  CcHardware cc = CcHardware::None;
  // --gpus-per-node, --intra-node-link, --inter-node-link: nodes and their links (core/emulated/topology.h)
  Topology topology{};
  // --gpu-baseline, --gpu-fused-efficiency: Note [Fused attention baseline] (core/emulated/emulated_gpu.h)
  GpuBaseline baseline = GpuBaseline::Teetrain;
  double fused_efficiency = 0;  // 0: table
};

struct ComputeOptions {
  DeviceKind device = DeviceKind::Cpu;  // cuda: one GPU per rank, rank % visible GPUs
  bool tf32 = false;                    // CUDA: TF32 tensor-core matmuls instead of exact FP32
  int threads = 0;                      // per rank (0: the host's cores shared among its ranks)
  ComputeMode mode = ComputeMode::Real;
  EmulatedGpuOptions gpu;            // --compute emulate only
  TimeModel time = TimeModel::Auto;  // emulated runs: virtual (computed) or wall-clock time
  HostModel host;                    // the modelled host (virtual time)

  // The platform the run is on (platform/platform.h): --compute emulate's GPU, else --device.
  DeviceKind platform() const { return mode == ComputeMode::Emulated ? DeviceKind::Emulated : device; }
  // The gradients live on a GPU, real or emulated.
  bool gpu_gradients() const { return mode == ComputeMode::Emulated || device == DeviceKind::Cuda; }
  bool virtual_time() const { return mode == ComputeMode::Emulated && time != TimeModel::Wall; }
};

// How the ranks average gradients: which path and algorithm, its buckets, segments and waits, and the
// links' model (engine/gradients/gradient_paths.h builds the path from this part).
struct ParallelOptions {
  AllreduceProvider allreduce = AllreduceProvider::Ours;
  // Which of ours: one for every bucket, or none ("auto": the cost model picks per bucket,
  // engine/gradients/allreduce_selection.h).
  std::optional<comm::ReduceAlgo> algo = comm::ReduceAlgo::Ring;
  std::string cost;  // --allreduce-cost FILE ("": the mode's defaults)
  double bucket_mb = 25;
  bool overlap = true;  // bucket all-reduces run while backward does
  int segment_kb = 0;   // ring segment size (pipelining); 0: automatic (engine/gradients/segments.h)
  long check_replicas = 0;
  double timeout_s = 30;
  comm::WaitMode wait = comm::WaitMode::Adaptive;                 // how the ring's thread waits for messages
  comm::HostTransport host_transport = comm::HostTransport::Shm;  // ranks of one host: shared memory or MPI
  // A CPU run's gradients: private memory on huge pages, or (where that applies) a buffer the host's
  // ranks add from in place (TrainingRun::place_grads). Private by default: sharing saves the ring one
  // pass over memory, but Linux may give shared memory no huge pages, which the optimizer's pass over
  // the gradients then pays for (docs/design.md §5, "Shared buffers"; measured: docs/benchmarks.md).
  comm::BufferMemory grad_memory = comm::BufferMemory::Private;
  double link_gbps = 0;              // throttle each ring link (0: none; --link emulate: the GPU's NVLink)
  LinkModel link = LinkModel::Real;  // emulate: plaintext ring payloads of an emulated GPU are not moved
  double cc_transfer_us = 0;  // fixed cost of one H100 CC bounce-buffer crossing of a CPU-sealed message
  ShardStage shard = ShardStage::None;  // --shard: gradients reduce-scattered, optimizer on this rank's shard
  bool prefetch = true;  // --shard params: the next unit's all-gather runs during this unit's compute
  // Ranks hosted by each process, as threads (Note [Virtual ranks], comm/transport/virtual_ranks.h):
  // emulated virtual-time runs only. How the ranks are hosted, not what they compute: not part of the
  // configuration the ranks agree on.
  int ranks_per_process = 1;
  // The ring's modelled size when a virtual-time run folds it onto its ranks (Note [Folded ring],
  // comm/allreduce/ring_geometry.h; 0: no fold, the ring is the world). Part of the agreed configuration.
  int model_ranks = 0;
  // The world the run models: model_ranks when folded, else `world` (the ranks that run).
  int modelled_world(int world) const { return model_ranks > 0 ? model_ranks : world; }
};

}  // namespace tt
