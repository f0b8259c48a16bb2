#include "engine/run/train_options.h"

#include "base/error.h"
#include "engine/gradients/allreduce_selection.h"
#include "tee/regular_file.h"

namespace tt {

nlohmann::json tee_json(const TeeOptions& o, bool gpu_gradients) {
  const TeeSwitches s = resolve_tee(o.settings, gpu_gradients);
  if (!s.on) return {{"mode", "off"}};
  return {{"mode", name(o.settings.mode)},
          {"cipher", enum_name(o.settings.cipher)},
          {"rekey_mb", o.settings.rekey_mb},
          {"pipeline", s.pipeline},
          {"forward_ag", s.forward_ag},
          {"crypto_threads", s.crypto_threads},
          {"direct_ingress", s.direct_ingress},
          {"device_crypto", s.device_crypto},
          {"allow_plain_data", o.allow_plain_data},
          {"attestation", o.trust.mode == comm::AttestationMode::Real
                              ? o.trust.real_kind.name
                              : comm::attestation_mode_name(o.trust.mode)}};
}

namespace {
// An emulated run's time model and its modelled host ("wall" for wall-clock time).
nlohmann::json host_time_json(const ComputeOptions& o) {
  if (o.time == TimeModel::Wall) return "wall";
  return {{"model", "virtual"},
          {"host_aead_gbps", o.host.aead_gbps},
          {"host_crypto_cores", o.host.crypto_cores},
          {"host_message_us", o.host.message_us},
          {"bounce_reencrypt", o.host.bounce_reencrypt}};
}
// The emulated GPU's settings (null for real compute). What was added later comes only when asked for,
// so that runs without it keep the configuration digest they had.
nlohmann::json emulated_gpu_json(const ComputeOptions& c) {
  if (c.mode != ComputeMode::Emulated) return nullptr;
  nlohmann::json j{{"name", c.gpu.name},
                   {"precision", enum_name(c.gpu.precision)},
                   {"tflops", c.gpu.tflops},
                   {"efficiency", c.gpu.efficiency},
                   {"act_traffic", c.gpu.act_traffic},
                   {"aead_gbps", c.gpu.aead_gbps},
                   {"time", host_time_json(c)}};
  if (c.gpu.cc != CcHardware::None) j["cc_hardware"] = enum_name(c.gpu.cc);
  // Note [Fused attention baseline] (core/emulated/emulated_gpu.h): not teetrain's kernels.
  if (c.gpu.baseline != GpuBaseline::Teetrain) {
    j["baseline"] = enum_name(c.gpu.baseline);
    j["fused_efficiency"] = c.gpu.fused_efficiency;
  }
  return j;
}

}  // namespace

nlohmann::json train_options_json(const TrainOptions& o) {
  const ScheduleOptions& sc = o.schedule;
  const ParallelOptions& p = o.parallel;
  const ComputeOptions& c = o.compute;
  nlohmann::json j = {
      {"model", model_config_json(o.model)},
      {"data", tee::printable_path(o.data.path)},  // JSON holds UTF-8 only: a non-UTF-8 path is escaped
      {"steps", sc.steps},
      {"batch", sc.batch},
      {"seq", sc.seq},
      {"grad_accum", sc.grad_accum},
      {"lr", sc.lr},
      {"min_lr_frac", sc.min_lr_frac},
      {"warmup", sc.warmup},
      {"schedule", enum_name(sc.schedule)},
      {"grad_clip", sc.grad_clip},
      {"weight_decay", sc.optimizer.weight_decay},
      {"optimizer", enum_name(sc.optimizer.kind)},
      {"momentum", sc.optimizer.momentum},
      {"betas", {sc.optimizer.beta1, sc.optimizer.beta2}},
      {"seed", sc.seed},
      {"val_every", sc.val_every},
      {"val_batches", sc.val_batches},
      {"save_every", o.checkpoints.save_every},
      {"timing_warmup", sc.timing_warmup},
      {"allreduce", name(p.allreduce)},
      {"allreduce_algo", comm::algo_name(p.algo)},
      // The calibration's coefficients, not its path: ranks must pick the same algorithm per bucket.
      {"allreduce_cost", p.cost.empty()
                             ? nlohmann::json(nullptr)
                             : cost_model_json(load_cost_model(p.cost, o.tee.settings.mode).model)},
      {"bucket_mb", p.bucket_mb},
      {"overlap", p.overlap ? "on" : "off"},
      {"segment_kb", p.segment_kb},
      {"comm_wait", enum_name(p.wait)},
      {"host_transport", enum_name(p.host_transport)},
      {"check_replicas", p.check_replicas},
      {"ingress_gbps", o.data.ingress_gbps},
      {"compute", name(c.mode)},
      {"device", enum_name(c.device)},
      {"tf32", c.tf32},
      {"gpu", emulated_gpu_json(c)},
      {"link_gbps", p.link_gbps},
      {"link", name(p.link)},
      {"cc_transfer_us", p.cc_transfer_us},
      {"tee", tee_json(o.tee, c.gpu_gradients())}};
  // The nodes, only when given (runs without them keep their digest).
  if (c.gpu.topology.given())
    j["topology"] = {{"gpus_per_node", c.gpu.topology.gpus_per_node},
                     {"intra", enum_name(c.gpu.topology.intra)},
                     {"inter", enum_name(c.gpu.topology.inter)}};
  // Only when given, so runs without pins keep the configuration digest (and policies) they had.
  if (!o.data.expect_dataset.empty()) j["expect_dataset"] = o.data.expect_dataset;
  // The same for the gradients' memory: only when not the default.
  if (p.grad_memory != comm::BufferMemory::Private) j["grad_memory"] = enum_name(p.grad_memory);
  // And --shard: the shard layout follows from it, the buckets and P (Note [Shard layout]).
  if (p.shard != ShardStage::None) j["shard"] = name(p.shard);
  // ZeRO-3's prefetch orders the gathers among the reduce-scatters: every rank must order them alike.
  if (p.shard == ShardStage::Params) j["prefetch"] = p.prefetch;
  // A folded ring cuts every bucket into the modelled ring's chunks: only when given (Note [Folded ring]).
  if (p.model_ranks > 0) j["model_ranks"] = p.model_ranks;
  if (!o.checkpoints.expect.empty()) j["expect_checkpoint"] = o.checkpoints.expect;
  // Every rank takes part in a sharded save: all must lay checkpoints out alike.
  if (o.checkpoints.layout) j["ckpt_layout"] = name(*o.checkpoints.layout);
  return j;
}

}  // namespace tt
