#include "engine/run_plan.h"

#include "base/error.h"
#include "platform/platform.h"

namespace tt {

namespace {

bool resolve(Toggle t, bool mode_default) {
  return t == Toggle::Auto ? mode_default : t == Toggle::On;
}

// What the plan's platform is asked to accept (platform/platform.h).
platform::Request platform_request(const RunPlan& p) {
  platform::Request r;
  r.emulated_links = p.link == LinkModel::Emulate;
  r.virtual_time = p.time == TimeModel::Virtual;
  r.cc_transfer_us = p.cc_transfer_us;
  r.checkpoints = p.checkpoints;
  r.tf32 = p.tf32;
  // switches() only where it matters (it throws for device crypto asked of ChaCha).
  r.adversary_on_device_crypto =
      p.adversary && p.compute == ComputeMode::Emulated && !p.virtual_time() && p.switches().device_crypto;
  return r;
}

// The choice of platform, what the platform refuses, and the emulated GPU's links and host model.
void platform_conflicts(const RunPlan& p, std::vector<std::string>& out) {
  if (p.device == DeviceKind::Cuda && p.compute == ComputeMode::Emulated)
    out.push_back(
        "--device cuda runs real compute on the GPU; --compute emulate replaces it by waits: use one "
        "or the other");
  platform::platform_entry(p.platform()).refuse(platform_request(p), out);
  if (p.link == LinkModel::Emulate && p.allreduce != AllreduceAlgo::Ring)
    out.push_back("--link emulate applies to our ring; use --allreduce ring");
  if (p.virtual_time() && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--time virtual models teetrain's own algorithms; ") + name(p.allreduce) +
                  "'s time would be this machine's: use --allreduce ring, or --time wall");
  if (!(p.host.aead_gbps > 0)) out.push_back("--host-aead-gbps must be > 0");
  if (p.host.crypto_cores < 0)
    out.push_back("--host-crypto-cores must be >= 0 (0: the mode's --crypto-threads)");
  if (p.host.message_us < 0) out.push_back("--host-message-us must be >= 0");
}

// The choices of the gradient path, the TEE and the adversary on its links.
void path_conflicts(const RunPlan& p, std::vector<std::string>& out) {
  if (p.allreduce == AllreduceAlgo::Nccl && p.device != DeviceKind::Cuda)
    out.push_back(
        "--allreduce nccl reduces GPU buffers with NCCL; add --device cuda, or use --allreduce ring|mpi");
  if (p.tee.mode != TeeMode::Off && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--allreduce ") + name(p.allreduce) +
                  " sends gradients in plaintext; use --allreduce ring with --tee");
  if (p.adversary && (p.allreduce != AllreduceAlgo::Ring || p.device == DeviceKind::Cuda))
    out.push_back(
        "--adversary sits on teetrain's host ring; MPI_Allreduce, NCCL and the device ring bypass "
        "it: use --allreduce ring on --device cpu (add --compute emulate for GPU-speed compute; in TEE "
        "mode with --tee cc or --tee-device-crypto off, so that the host really seals)");
  if (p.allreduce_algo != comm::AlgoRequest::Ring && p.allreduce != AllreduceAlgo::Ring)
    out.push_back(std::string("--allreduce-algo ") + enum_name(p.allreduce_algo) +
                  " chooses among teetrain's own algorithms: use it with --allreduce ring");
  // The device ring's condition (engine/gradient_paths.cpp: device_ring_asked); switches() only where it matters.
  if (p.allreduce_algo != comm::AlgoRequest::Ring && p.device == DeviceKind::Cuda &&
      (p.tee.mode == TeeMode::Off || p.switches().device_crypto))
    out.push_back(std::string("--allreduce-algo ") + enum_name(p.allreduce_algo) +
                  " runs on host buffers; the device ring of --device cuda is a ring: use --allreduce-algo "
                  "ring, or --tee cc (gradients staged through the host)");
  const bool mitm = p.adversary && (p.adversary->kind == comm::AttackKind::Mitm ||
                                    p.adversary->kind == comm::AttackKind::MitmRelay);
  if (mitm && p.tee.mode == TeeMode::Off)
    out.push_back(std::string("--adversary ") + comm::attack_name(p.adversary->kind) +
                  " attacks the attestation handshake, which only TEE mode runs: add --tee cc or --tee fast");
  if (p.adversary && p.adversary->kind == comm::AttackKind::MitmRelay &&
      p.tee.cipher != tee::Cipher::Aes256Gcm)
    out.push_back("--adversary mitm-relay re-seals AES-256-GCM messages only: drop --cipher");
}

}  // namespace

const char* name(ComputeMode m) {
  return enum_name(m);
}
const char* name(AllreduceAlgo a) {
  return enum_name(a);
}
const char* name(LinkModel l) {
  return enum_name(l);
}
const char* name(TimeModel t) {
  return enum_name(t);
}
const char* name(TeeMode m) {
  return enum_name(m);
}
const char* name(Toggle t) {
  return enum_name(t);
}

TeeSwitches resolve_tee(const TeeSettings& o, bool gpu_gradients) {
  TeeSwitches s;
  s.on = o.mode != TeeMode::Off;
  s.cc = o.mode == TeeMode::Cc;
  const bool fast = o.mode == TeeMode::Fast;
  s.pipeline = s.on && resolve(o.pipeline, fast);
  s.forward_ag = s.on && resolve(o.forward_ag, fast);
  s.crypto_threads = o.crypto_threads > 0 ? o.crypto_threads : (fast ? 2 : 1);
  s.direct_ingress = !s.on || resolve(o.direct_ingress, fast);
  s.cipher = o.cipher;
  // The GPU seals with AES-GCM only: with ChaCha the host seals (auto), and asking for both is an error.
  const bool gpu_cipher = s.cipher != tee::Cipher::ChaCha20Poly1305;
  if (s.on && gpu_gradients && o.device_crypto == Toggle::On && !gpu_cipher)
    throw InputError(
        "--tee-device-crypto on: the GPU seals with AES-GCM only; use --cipher aes-256-gcm or "
        "aes-128-gcm, or --tee-device-crypto off for chacha20-poly1305");
  s.device_crypto = s.on && gpu_gradients && gpu_cipher && resolve(o.device_crypto, fast);
  return s;
}

std::vector<std::string> plan_conflicts(const RunPlan& p) {
  std::vector<std::string> out;
  platform_conflicts(p, out);
  path_conflicts(p, out);
  if (p.timing_warmup > 0 && p.timing_warmup >= p.steps)
    out.push_back("--timing-warmup " + std::to_string(p.timing_warmup) +
                  " leaves no step to time; it must be smaller than --steps " + std::to_string(p.steps));
  if (p.expect_checkpoint && !p.resume)
    out.push_back("--expect-checkpoint pins the checkpoint a run resumes from: add --resume DIR");
  if (p.context > 0 && p.seq > p.context)
    out.push_back("--seq " + std::to_string(p.seq) + " is longer than the model's context (" +
                  std::to_string(p.context) + "); use --seq <= " + std::to_string(p.context) +
                  " or raise --context");
  return out;
}

void validate(const RunPlan& p) {
  const std::vector<std::string> conflicts = plan_conflicts(p);
  if (conflicts.empty()) return;
  if (conflicts.size() == 1) throw InputError(conflicts.front());
  std::string all = std::to_string(conflicts.size()) + " conflicting options:";
  for (std::size_t i = 0; i < conflicts.size(); ++i)
    all += " (" + std::to_string(i + 1) + ") " + conflicts[i];
  throw InputError(all);
}

}  // namespace tt
