#include "engine/train_options.h"

#include "base/error.h"
#include "engine/allreduce_selection.h"
#include "engine/image_source.h"
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
          {"attestation", comm::attestation_mode_name(o.trust.mode)}};
}

long steps_for_epochs(const TrainOptions& o, const ImageSource* images, int world) {
  if (o.epochs <= 0) return o.steps;
  if (images == nullptr) {
    throw InputError("--epochs counts passes over image data; for token data give --steps");
  }
  const uint64_t n = images->sealed() ? images->sealed_train_info->images : images->train_set->size();
  const auto global =
      static_cast<uint64_t>(o.batch) * static_cast<uint64_t>(world) * static_cast<uint64_t>(o.grad_accum);
  const auto steps = static_cast<long>((n + global - 1) / global) * o.epochs;
  if (o.timing_warmup >= steps) {
    throw InputError("--timing-warmup " + std::to_string(o.timing_warmup) + " leaves no step to time in " +
                     std::to_string(steps) + " steps (--epochs " + std::to_string(o.epochs) + ")");
  }
  return steps;
}

namespace {
// An emulated run's time model and its modelled host (null for wall-clock time).
nlohmann::json host_time_json(const TrainOptions& o) {
  if (o.time == TimeModel::Wall) return "wall";
  return {{"model", "virtual"},
          {"host_aead_gbps", o.host.aead_gbps},
          {"host_crypto_cores", o.host.crypto_cores},
          {"host_message_us", o.host.message_us},
          {"bounce_reencrypt", o.host.bounce_reencrypt}};
}
}  // namespace

RunPlan run_plan(const TrainOptions& o) {
  RunPlan p;
  p.device = o.device;
  p.compute = o.compute;
  p.allreduce = o.allreduce;
  p.allreduce_algo = o.allreduce_algo;
  p.allreduce_cost = o.allreduce_cost;
  p.link = o.link;
  p.overlap = o.overlap;
  p.tf32 = o.tf32;
  p.cc_transfer_us = o.cc_transfer_us;
  p.segment_kb = o.segment_kb;
  p.link_gbps = o.link_gbps;
  p.time = o.time;
  p.host = o.host;
  p.steps = o.steps;
  p.timing_warmup = o.timing_warmup;
  p.checkpoints = o.save_every > 0 || !o.resume.empty();
  p.resume = !o.resume.empty();
  p.expect_checkpoint = !o.expect_checkpoint.empty();
  p.seq = o.seq;
  p.context = o.seq > 0 ? model_context(o.model) : 0;
  p.tee = o.tee.settings;
  p.adversary = o.tee.adversary;
  return p;
}

nlohmann::json train_options_json(const TrainOptions& o) {
  nlohmann::json j = {
      {"model", model_config_json(o.model)},
      {"data", tee::printable_path(o.data)},  // JSON holds UTF-8 only: a non-UTF-8 path is escaped
      {"steps", o.steps},
      {"batch", o.batch},
      {"seq", o.seq},
      {"grad_accum", o.grad_accum},
      {"lr", o.lr},
      {"min_lr_frac", o.min_lr_frac},
      {"warmup", o.warmup},
      {"schedule", enum_name(o.schedule)},
      {"grad_clip", o.grad_clip},
      {"weight_decay", o.weight_decay},
      {"optimizer", enum_name(o.optimizer)},
      {"momentum", o.momentum},
      {"betas", {o.beta1, o.beta2}},
      {"seed", o.seed},
      {"val_every", o.val_every},
      {"val_batches", o.val_batches},
      {"save_every", o.save_every},
      {"timing_warmup", o.timing_warmup},
      {"allreduce", name(o.allreduce)},
      {"allreduce_algo", enum_name(o.allreduce_algo)},
      // The calibration's coefficients, not its path: ranks must pick the same algorithm per bucket.
      {"allreduce_cost", o.allreduce_cost.empty()
                             ? nlohmann::json(nullptr)
                             : cost_model_json(load_cost_model(o.allreduce_cost, o.tee.settings.mode).model)},
      {"bucket_mb", o.bucket_mb},
      {"overlap", o.overlap ? "on" : "off"},
      {"segment_kb", o.segment_kb},
      {"comm_wait", enum_name(o.comm_wait)},
      {"check_replicas", o.check_replicas},
      {"ingress_gbps", o.ingress_gbps},
      {"compute", name(o.compute)},
      {"device", enum_name(o.device)},
      {"tf32", o.tf32},
      {"gpu", o.compute == ComputeMode::Emulated ? nlohmann::json{{"name", o.gpu},
                                                                  {"precision", enum_name(o.gpu_precision)},
                                                                  {"tflops", o.gpu_tflops},
                                                                  {"efficiency", o.gpu_efficiency},
                                                                  {"act_traffic", o.gpu_act_traffic},
                                                                  {"aead_gbps", o.gpu_aead_gbps},
                                                                  {"time", host_time_json(o)}}
                                                 : nlohmann::json(nullptr)},
      {"link_gbps", o.link_gbps},
      {"link", name(o.link)},
      {"cc_transfer_us", o.cc_transfer_us},
      {"tee", tee_json(o.tee, gpu_gradients(o))}};
  // Only when given, so runs without pins keep the configuration digest (and policies) they had.
  if (!o.expect_dataset.empty()) j["expect_dataset"] = o.expect_dataset;
  if (!o.expect_checkpoint.empty()) j["expect_checkpoint"] = o.expect_checkpoint;
  return j;
}

TrainConfig trainer_config(const TrainOptions& o, bool have_val) {
  TrainConfig tc;
  tc.steps = o.steps;
  tc.batch = o.batch;
  tc.seq = o.seq;
  tc.grad_accum = o.grad_accum;
  tc.lr = LrSchedule{o.lr, o.min_lr_frac, o.warmup, o.steps, o.schedule};
  tc.grad_clip = o.grad_clip;
  tc.opt = OptimizerConfig{o.optimizer, o.beta1, o.beta2, 1e-8f, o.momentum, o.weight_decay};
  tc.seed = o.seed;
  tc.val_every = o.val_every;
  tc.val_batches = have_val ? o.val_batches : 0;
  tc.progress = !o.no_progress && !o.quiet;
  tc.save_every = o.save_every;
  tc.timing_warmup = o.timing_warmup;
  return tc;
}

}  // namespace tt
