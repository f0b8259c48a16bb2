#include "engine/run/run_plan.h"

#include <optional>
#include <utility>

#include "base/error.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/input/image_source.h"
#include "engine/run/platform_profile.h"
#include "platform/platform.h"
#include "tee/regular_file.h"

namespace tt {

namespace {

TeeSwitches tee_switches(const TrainOptions& o) {
  return resolve_tee(o.tee.settings, o.compute.gpu_gradients());
}

// The switches for checking the other choices: a conflict among the TEE flags is listed on its own
// (plan_conflicts), not thrown before the rest are seen.
TeeSwitches lenient_switches(const TrainOptions& o) {
  return resolve_tee_lenient(o.tee.settings, o.compute.gpu_gradients());
}

// Image models take their input shape and classes from the data and have no sequence length.
TrainOptions resolved(const TrainOptions& given, const ImageSource* images, int world) {
  TrainOptions o = given;
  if (images != nullptr) {
    o.model.image_channels = images->channels;
    o.model.image_size = images->image_size;
    o.model.num_classes = images->classes;
    o.schedule.seq = 0;
  }
  o.schedule.steps = steps_for_epochs(o.schedule, images, world);
  // A fold runs per-hop all-gathers (fold_conflicts): fast's default forwarded one gives way.
  if (o.parallel.model_ranks > 0 && o.tee.settings.forward_ag == Toggle::Auto)
    o.tee.settings.forward_ag = Toggle::Off;
  // Whether the emulated topology has more than one node (Topology::one_node).
  o.compute.gpu.topology.world = o.parallel.modelled_world(world);
  return o;
}

// What the plan's platform is asked to accept (platform/platform.h).
platform::Request platform_request(const TrainOptions& o) {
  const ComputeOptions& c = o.compute;
  const ParallelOptions& p = o.parallel;
  platform::Request r;
  r.emulated_links = p.link == LinkModel::Emulate;
  r.virtual_time = c.time == TimeModel::Virtual;
  r.cc_transfer_us = p.cc_transfer_us;
  r.cc_hardware = c.gpu.cc != CcHardware::None;
  r.checkpoints = o.checkpoints.any();
  r.tf32 = c.tf32;
  r.adversary_on_device_crypto = o.tee.adversary && c.mode == ComputeMode::Emulated && !c.virtual_time() &&
                                 lenient_switches(o).device_crypto;
  return r;
}

// The choice of platform, what the platform refuses, and the emulated GPU's host model.
void platform_conflicts(const TrainOptions& o, std::vector<std::string>& out) {
  const ComputeOptions& c = o.compute;
  if (c.device == DeviceKind::Cuda && c.mode == ComputeMode::Emulated)
    out.push_back(
        "--device cuda runs real compute on the GPU; --compute emulate replaces it by waits: use one "
        "or the other");
  platform::platform_entry(c.platform()).refuse(platform_request(o), out);
  if (!(c.host.aead_gbps > 0)) out.push_back("--host-aead-gbps must be > 0");
  if (c.host.crypto_cores < 0)
    out.push_back("--host-crypto-cores must be >= 0 (0: the mode's --crypto-threads)");
  if (c.host.message_us < 0) out.push_back("--host-message-us must be >= 0");
}

// The gradient path's conflicts are its table row's (engine/gradients/gradient_paths.h); the
// adversary's on the handshake are the TEE's.
void path_conflicts(const TrainOptions& o, std::vector<std::string>& out) {
  const ComputeOptions& c = o.compute;
  const std::optional<comm::AdversarySpec>& adversary = o.tee.adversary;
  const PathRequest request{.parallel = o.parallel,
                            .compute = c,
                            .tee = lenient_switches(o),
                            .adversary = adversary.has_value(),
                            .device_gradients = c.platform() == DeviceKind::Cuda,
                            .mpirun = true,          // a plan is a run under mpirun
                            .several_ranks = true};  // whatever the world: the same conflicts
  for (std::string& conflict : tt::path_conflicts(request)) out.push_back(std::move(conflict));
  const TeeSettings& tee = o.tee.settings;
  if (adversary && comm::attacks_handshake(adversary->kind) && tee.mode == TeeMode::Off)
    out.push_back(std::string("--adversary ") + comm::attack_name(adversary->kind) +
                  " attacks the attestation handshake, which only TEE mode runs: add --tee cc or --tee fast");
  if (adversary && adversary->kind == comm::AttackKind::MitmRelay && tee.cipher != tee::Cipher::Aes256Gcm)
    out.push_back("--adversary mitm-relay re-seals AES-256-GCM messages only: drop --cipher");
}

// Note [Folded ring] (comm/allreduce/ring_geometry.h): what a fold needs — a modelled ring (virtual time,
// synthetic gradients, teetrain's ring with per-hop all-gathers) and a world that repeats
// inside it (ranks dividing P; with nodes, whole nodes on both sides of a node boundary).
void fold_conflicts(const TrainOptions& o, int world, std::vector<std::string>& out) {
  const ParallelOptions& p = o.parallel;
  if (p.model_ranks <= 0) return;
  const std::string flag = "--model-ranks " + std::to_string(p.model_ranks);
  if (!o.compute.virtual_time())
    out.push_back(flag +
                  " models a ring in emulated virtual time only: add --compute emulate (--time virtual)");
  if (p.allreduce != AllreduceProvider::Ours || p.algo != comm::ReduceAlgo::Ring)
    out.push_back(flag + " folds teetrain's ring: use --allreduce ours --allreduce-algo ring");
  if (o.tee.settings.forward_ag == Toggle::On)
    out.push_back(flag +
                  " needs per-hop all-gathers (a forwarded one would lap the ranks run): drop "
                  "--tee-forward-ag on");
  if (world < 2 || p.model_ranks < world || p.model_ranks % world != 0)
    out.push_back(flag + " must be a multiple of the " + std::to_string(world) +
                  " ranks run, and they at least 2 (mpirun -np N x --ranks-per-process K)");
  const int g = o.compute.gpu.topology.gpus_per_node;
  if (g > 0 && p.model_ranks > g && (world % g != 0 || world < 2 * g))
    out.push_back(
        flag + " with --gpus-per-node " + std::to_string(g) + " folds whole nodes: run a multiple of " +
        std::to_string(g) + " ranks, at least " + std::to_string(2 * g) +
        " (a node boundary inside the ranks run as in the modelled ring), not " + std::to_string(world));
}

}  // namespace

RunPlan::RunPlan(const TrainOptions& options, const ImageSource* images, int world)
    : o_(resolved(options, images, world)), images_(images != nullptr), world_(world) {
  validate(o_, world);  // every conflicting choice in one message (exit 2)
  validate_topology(o_.compute.gpu.topology, o_.parallel.modelled_world(world));
  ts_ = tee_switches(o_);
  json_ = train_options_json(o_);
}

platform::Options platform_options(const ComputeOptions& c, bool tee, int threads, int rank,
                                   RunClock& clock) {
  platform::Options po;
  po.threads = threads;
  po.rank = rank;
  po.tf32 = c.tf32;
  if (c.mode == ComputeMode::Emulated) {
    const EmulatedGpuOptions& g = c.gpu;
    po.gpu = EmulatedGpu{
        resolve_gpu_spec(g.name), g.precision, g.tflops, g.efficiency, g.aead_gbps, g.act_traffic};
    // The TEE-off baseline is the same GPU with CC off (Note [CC hardware costs]).
    if (tee) po.gpu->cc = cc_costs(g.cc);
    po.gpu->topology = g.topology;
    po.gpu->baseline = g.baseline;
    po.gpu->fused_efficiency_override = g.fused_efficiency;
    po.clock = &clock;
  }
  return po;
}

long steps_for_epochs(const ScheduleOptions& s, const ImageSource* images, int world) {
  if (s.epochs <= 0) return s.steps;
  if (images == nullptr) {
    throw InputError("--epochs counts passes over image data; for token data give --steps");
  }
  const uint64_t n = images->sealed() ? images->sealed_train_info->images : images->train_set->set().size();
  const auto global =
      static_cast<uint64_t>(s.batch) * static_cast<uint64_t>(world) * static_cast<uint64_t>(s.grad_accum);
  const auto steps = static_cast<long>((n + global - 1) / global) * s.epochs;
  if (s.timing_warmup >= steps) {
    throw InputError("--timing-warmup " + std::to_string(s.timing_warmup) + " leaves no step to time in " +
                     std::to_string(steps) + " steps (--epochs " + std::to_string(s.epochs) + ")");
  }
  return steps;
}

std::vector<std::string> plan_conflicts(const TrainOptions& o) {
  std::vector<std::string> out;
  if (std::string tee = tee_conflict(o.tee.settings, o.compute.gpu_gradients()); !tee.empty())
    out.push_back(std::move(tee));
  platform_conflicts(o, out);
  path_conflicts(o, out);
  // Note [Virtual ranks]: a thread is a rank only where its compute and its time are modelled, and its
  // messages take teetrain's own transports.
  if (o.parallel.ranks_per_process > 1 && !o.compute.virtual_time())
    out.push_back(
        "--ranks-per-process hosts ranks as threads only in emulated virtual time: add --compute "
        "emulate (with --time virtual or auto), or run one rank per process");
  if (o.parallel.ranks_per_process > 1 && o.parallel.allreduce != AllreduceProvider::Ours)
    out.push_back(
        "--ranks-per-process needs teetrain's own all-reduce (--allreduce ours): MPI_Allreduce "
        "and NCCL know one rank per process");
  const ScheduleOptions& s = o.schedule;
  // With --epochs the steps come from the data: steps_for_epochs checks the warm-up against them.
  if (s.epochs <= 0 && s.timing_warmup > 0 && s.timing_warmup >= s.steps)
    out.push_back("--timing-warmup " + std::to_string(s.timing_warmup) +
                  " leaves no step to time; it must be smaller than --steps " + std::to_string(s.steps));
  // Outputs written at the end (or every step) are refused now, not after the whole run.
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--metrics", o.output.metrics},
                                   {"--summary", o.output.summary},
                                   {"--trace", o.output.trace}})
    if (!path.empty())
      if (std::string why = tee::output_path_problem(path, flag); !why.empty()) out.push_back(std::move(why));
  if (o.checkpoints.layout == CkptLayout::Sharded && o.parallel.shard == ShardStage::None)
    out.push_back(
        "--ckpt-layout sharded saves each rank's shard of the optimizer state, but --shard none keeps no "
        "shards: add --shard optimizer|gradients|params, or use --ckpt-layout whole");
  if (!o.checkpoints.expect.empty() && o.checkpoints.resume.empty())
    out.push_back("--expect-checkpoint pins the checkpoint a run resumes from: add --resume DIR");
  // Image models have no sequence (the plan sets it to 0); a token model's is at most its context.
  const int context = s.seq > 0 ? model_context(o.model) : 0;
  if (context > 0 && s.seq > context)
    out.push_back("--seq " + std::to_string(s.seq) + " is longer than the model's context (" +
                  std::to_string(context) + "); use --seq <= " + std::to_string(context) +
                  " or raise --context");
  return out;
}

void validate(const TrainOptions& o, int world) {
  std::vector<std::string> conflicts = plan_conflicts(o);
  if (world > 0) fold_conflicts(o, world, conflicts);
  if (conflicts.empty()) return;
  if (conflicts.size() == 1) throw InputError(conflicts.front());
  std::string all = std::to_string(conflicts.size()) + " conflicting options:";
  for (std::size_t i = 0; i < conflicts.size(); ++i)
    all += " (" + std::to_string(i + 1) + ") " + conflicts[i];
  throw InputError(all);
}

}  // namespace tt
