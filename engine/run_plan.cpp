#include "engine/run_plan.h"

#include <optional>

#include "base/error.h"
#include "engine/image_source.h"
#include "engine/platform_profile.h"
#include "platform/platform.h"

namespace tt {

namespace {

TeeSwitches tee_switches(const TrainOptions& o) {
  return resolve_tee(o.tee.settings, o.compute.gpu_gradients());
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
  r.checkpoints = o.checkpoints.any();
  r.tf32 = c.tf32;
  // tee_switches() only where it matters (it throws for device crypto asked of ChaCha).
  r.adversary_on_device_crypto = o.tee.adversary && c.mode == ComputeMode::Emulated && !c.virtual_time() &&
                                 tee_switches(o).device_crypto;
  return r;
}

// The choice of platform, what the platform refuses, and the emulated GPU's links and host model.
void platform_conflicts(const TrainOptions& o, std::vector<std::string>& out) {
  const ComputeOptions& c = o.compute;
  const ParallelOptions& p = o.parallel;
  if (c.device == DeviceKind::Cuda && c.mode == ComputeMode::Emulated)
    out.push_back(
        "--device cuda runs real compute on the GPU; --compute emulate replaces it by waits: use one "
        "or the other");
  platform::platform_entry(c.platform()).refuse(platform_request(o), out);
  if (p.link == LinkModel::Emulate && p.allreduce != AllreduceAlgo::Ring)
    out.push_back("--link emulate applies to our ring; use --allreduce ring");
  if (c.virtual_time() && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--time virtual models teetrain's own algorithms; ") + name(p.allreduce) +
                  "'s time would be this machine's: use --allreduce ring, or --time wall");
  if (!(c.host.aead_gbps > 0)) out.push_back("--host-aead-gbps must be > 0");
  if (c.host.crypto_cores < 0)
    out.push_back("--host-crypto-cores must be >= 0 (0: the mode's --crypto-threads)");
  if (c.host.message_us < 0) out.push_back("--host-message-us must be >= 0");
}

// The choices of the gradient path, the TEE and the adversary on its links.
void path_conflicts(const TrainOptions& o, std::vector<std::string>& out) {
  const ParallelOptions& p = o.parallel;
  const DeviceKind device = o.compute.device;
  const TeeSettings& tee = o.tee.settings;
  const std::optional<comm::AdversarySpec>& adversary = o.tee.adversary;
  if (p.allreduce == AllreduceAlgo::Nccl && device != DeviceKind::Cuda)
    out.push_back(
        "--allreduce nccl reduces GPU buffers with NCCL; add --device cuda, or use --allreduce ring|mpi");
  if (tee.mode != TeeMode::Off && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--allreduce ") + name(p.allreduce) +
                  " sends gradients in plaintext; use --allreduce ring with --tee");
  if (adversary && (p.allreduce != AllreduceAlgo::Ring || device == DeviceKind::Cuda))
    out.push_back(
        "--adversary sits on teetrain's host ring; MPI_Allreduce, NCCL and the device ring bypass "
        "it: use --allreduce ring on --device cpu (add --compute emulate for GPU-speed compute; in TEE "
        "mode with --tee cc or --tee-device-crypto off, so that the host really seals)");
  if (p.algo != comm::AlgoRequest::Ring && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--allreduce-algo ") + enum_name(p.algo) +
                  " chooses among teetrain's own algorithms: use it with --allreduce ring");
  // The device ring's condition (engine/gradient_paths.cpp: device_ring_asked); tee_switches() only where it
  // matters.
  if (p.algo != comm::AlgoRequest::Ring && device == DeviceKind::Cuda &&
      (tee.mode == TeeMode::Off || tee_switches(o).device_crypto))
    out.push_back(std::string("--allreduce-algo ") + enum_name(p.algo) +
                  " runs on host buffers; the device ring of --device cuda is a ring: use --allreduce-algo "
                  "ring, or --tee cc (gradients staged through the host)");
  const bool mitm = adversary && (adversary->kind == comm::AttackKind::Mitm ||
                                  adversary->kind == comm::AttackKind::MitmRelay);
  if (mitm && tee.mode == TeeMode::Off)
    out.push_back(std::string("--adversary ") + comm::attack_name(adversary->kind) +
                  " attacks the attestation handshake, which only TEE mode runs: add --tee cc or --tee fast");
  if (adversary && adversary->kind == comm::AttackKind::MitmRelay && tee.cipher != tee::Cipher::Aes256Gcm)
    out.push_back("--adversary mitm-relay re-seals AES-256-GCM messages only: drop --cipher");
}

}  // namespace

RunPlan::RunPlan(const TrainOptions& options, const ImageSource* images, int world)
    : o_(resolved(options, images, world)), images_(images != nullptr) {
  validate(o_);  // every conflicting choice in one message (exit 2)
  ts_ = tee_switches(o_);
  json_ = train_options_json(o_);
}

platform::Options platform_options(const ComputeOptions& c, int threads, int rank, RunClock& clock) {
  platform::Options po;
  po.threads = threads;
  po.rank = rank;
  po.tf32 = c.tf32;
  if (c.mode == ComputeMode::Emulated) {
    const EmulatedGpuOptions& g = c.gpu;
    po.gpu = EmulatedGpu{
        resolve_gpu_spec(g.name), g.precision, g.tflops, g.efficiency, g.aead_gbps, g.act_traffic};
    po.clock = &clock;
  }
  return po;
}

long steps_for_epochs(const ScheduleOptions& s, const ImageSource* images, int world) {
  if (s.epochs <= 0) return s.steps;
  if (images == nullptr) {
    throw InputError("--epochs counts passes over image data; for token data give --steps");
  }
  const uint64_t n = images->sealed() ? images->sealed_train_info->images : images->train_set->size();
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
  platform_conflicts(o, out);
  path_conflicts(o, out);
  const ScheduleOptions& s = o.schedule;
  if (s.timing_warmup > 0 && s.timing_warmup >= s.steps)
    out.push_back("--timing-warmup " + std::to_string(s.timing_warmup) +
                  " leaves no step to time; it must be smaller than --steps " + std::to_string(s.steps));
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

void validate(const TrainOptions& o) {
  const std::vector<std::string> conflicts = plan_conflicts(o);
  if (conflicts.empty()) return;
  if (conflicts.size() == 1) throw InputError(conflicts.front());
  std::string all = std::to_string(conflicts.size()) + " conflicting options:";
  for (std::size_t i = 0; i < conflicts.size(); ++i)
    all += " (" + std::to_string(i + 1) + ") " + conflicts[i];
  throw InputError(all);
}

}  // namespace tt
