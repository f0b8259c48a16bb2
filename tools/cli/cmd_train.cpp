// `teetrain train`: assembles one rank's run from engine pieces (TrainRun), trains, and prints.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "base/error.h"
#include "comm/mpi_transport.h"
#include "comm/sealed_channel.h"
#include "comm/secure_session.h"
#include "data/sealed_tokens.h"
#include "data/token_loader.h"
#include "engine/adversary_wire.h"
#include "engine/at_rest_keys.h"
#include "engine/checkpoint.h"
#include "engine/core/backend_factory.h"
#include "engine/core/emulated/emulated_backend.h"
#include "engine/ddp_reducer.h"
#include "engine/dist_context.h"
#include "engine/freshness.h"
#include "engine/gradient_reduction.h"
#include "engine/host_layout.h"
#include "engine/image_source.h"
#include "engine/key_file.h"
#include "engine/sealed_codec.h"
#include "engine/tee_session.h"
#include "engine/token_source.h"
#include "engine/trace_writer.h"
#include "engine/trainer.h"
#include "tools/cli/commands.h"
#include "tools/cli/run_report.h"
#include "tools/cli/train_options.h"

namespace tt::cli {
namespace {

// Ranks sharing this host split its cores between them unless --threads says otherwise.
int default_threads(int requested) {
  if (requested > 0) return requested;
  return std::max(1, host_cores() / ranks_on_this_host());
}

std::string tee_label(const TeeOptions& o, const TeeSwitches& ts) {
  if (!ts.on) return "tee off";
  return std::string("tee ") + name(o.settings.mode) + " (" + enum_name(ts.cipher) + ", pipeline " +
         (ts.pipeline ? "on" : "off") + ", forward-ag " + (ts.forward_ag ? "on" : "off") +
         ", crypto threads " + std::to_string(ts.crypto_threads) + ", ingress " +
         (ts.direct_ingress ? "direct" : "bounce") +
         (ts.device_crypto ? ", gradients sealed on the GPU" : "") + ")";
}

// The summary's "attestation" object (null with TEE off): how the peers were authenticated, and a
// warning when nothing authenticated them.
nlohmann::json attestation_json(const std::optional<comm::AttestConfig>& attest, int world) {
  if (!attest) return nullptr;
  const AttestationSummary s = attestation_summary(*attest, world);
  nlohmann::json j = {{"mode", s.mode}, {"authenticated", s.authenticated}};
  if (!s.warning.empty()) j["warning"] = s.warning;
  return j;
}

// What the trainer measured, as the summary's first fields.
nlohmann::json result_json(const TrainResult& r, bool images) {
  return {{"steps", r.steps},
          {"final_loss", r.final_loss},
          {"val_loss", r.val_loss},
          {"val_accuracy", r.val_accuracy},
          {images ? "images_per_s" : "tokens_per_s", r.items_per_s},
          {"items_per_s", r.items_per_s},
          {"items", images ? "images" : "tokens"},
          {"step_s_mean", r.step_seconds_mean},
          {"timed_steps", r.timed_steps},
          {"train_seconds", r.seconds},
          {"params_sha256", r.params_sha256}};
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
  tc.progress = !o.no_progress;
  tc.save_every = o.save_every;
  tc.timing_warmup = o.timing_warmup;
  return tc;
}

// One rank's training run, assembled stage by stage. Members are declared in the order the stages
// build them, so they are destroyed in reverse: the reducer's communication thread stops before the
// channel and the transport it uses go away, and the profiler outlives everything that records.
class TrainRun {
 public:
  explicit TrainRun(const TrainOptions& opts);
  TrainResult run();
  // Collective: gathers the phase report and the adversary's view; rank 0 prints and writes the summary.
  void finish(const TrainResult& r);

 private:
  void resolve_images();
  void start_links();
  void open_data();
  void build_model();
  void setup_checkpoints();
  void restore_or_broadcast();
  void build_reducer();
  void print_banner() const;
  void print_result(const TrainResult& r, const std::string& adversary_view) const;
  void write_summary(const TrainResult& r, const nlohmann::json& report);

  Profiler profiler_;
  TrainOptions o_;
  std::optional<ImageSource> img_;
  RunPlan plan_;
  TeeSwitches ts_;
  std::optional<comm::MpiTransport> mpi_;
  std::optional<AdversaryWire> wire_;  // every message between ranks goes through wire_->transport()
  int rank_ = 0;
  int world_ = 1;
  nlohmann::json run_json_;
  std::optional<comm::AttestConfig> attest_;
  std::optional<TeeSession> tee_session_;
  comm::PlainChannel plain_;
  comm::Channel* channel_ = &plain_;  // every message's channel: plain_, or the TEE session's sealed one
  std::optional<DistContext> dist_;
  AtRestKeys at_rest_;
  DataSource data_;
  int threads_ = 1;
  int ranks_per_host_ = 1;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  TrainConfig tc_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<FileCodec> codec_;
  std::optional<FreshnessRecord> freshness_;
  std::unique_ptr<CheckpointStore> store_;
  long start_step_ = 0;
  uint64_t samples_ = 0;
  std::optional<GradientReduction> grads_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<DdpReducer> reducer_;
};

TrainRun::TrainRun(const TrainOptions& opts) : profiler_(/*trace=*/!opts.trace.empty()), o_(opts) {
  resolve_images();
  plan_ = run_plan(o_);
  validate(plan_);  // every conflicting choice in one message (exit 2)
  ts_ = plan_.switches();
  mpi_.emplace(MPI_COMM_WORLD, std::chrono::milliseconds(static_cast<long>(o_.timeout_s * 1000.0)));
  mpi_->set_wait_policy({.mode = o_.comm_wait});  // before the adversary's decorator copies it
  wire_.emplace(*mpi_, o_.tee.adversary, ts_.on);
  rank_ = mpi_->rank();
  world_ = mpi_->size();
  if (wire_->active() && rank_ == 0) std::fprintf(stderr, "%s\n", wire_->banner().c_str());
  o_.steps = steps_for_epochs(o_, img_ ? &*img_ : nullptr, world_);  // --epochs N -> steps
  run_json_ = train_options_json(o_);
  start_links();
  open_data();
  build_model();
  setup_checkpoints();
  restore_or_broadcast();
  build_reducer();
  if (rank_ == 0) print_banner();
}

// Image models take their input shape and classes from the data and have no sequence length: both
// are resolved before the plan is validated and the configuration hashed for the agreement.
void TrainRun::resolve_images() {
  if (!is_image_model(o_.model)) return;
  img_.emplace(open_image_source(
      {o_.data, o_.seed, /*augment=*/false, o_.tee.settings.mode != TeeMode::Off, o_.tee.allow_plain_data}));
  o_.model.image_channels = img_->channels;
  o_.model.image_size = img_->image_size;
  o_.model.num_classes = img_->classes;
  o_.seq = 0;
}

// In TEE mode: attest the ring neighbours, agree keys, and build the one sealed channel that carries
// every message between ranks from then on (gradients, broadcasts, agreement, replica checks); then
// check every rank runs this configuration, and release the keys at rest.
void TrainRun::start_links() {
  comm::Transport& transport = wire_->transport();
  if (ts_.on) {
    attest_ = make_attest_config(o_.tee.trust, rank_, world_, run_json_.dump());
    tee_session_.emplace(
        transport, *attest_,
        TeeChannelOptions{ts_.cipher, o_.tee.settings.rekey_mb, static_cast<std::size_t>(ts_.crypto_threads)},
        &profiler_);
  }
  if (tee_session_) channel_ = &tee_session_->channel();
  dist_.emplace(transport, *channel_, &profiler_);
  dist_->agree_config(run_json_.dump());
  if (!ts_.on) return;
  const bool sealed_data =
      img_ ? img_->sealed() : require_sealed_data(o_.data, "train", o_.tee.allow_plain_data);
  const bool need_ckpt_key = o_.save_every > 0 || !o_.resume.empty();
  at_rest_ = release_at_rest_keys(
      transport, tee_session_->keys(), o_.tee.key_file, sealed_data, need_ckpt_key,
      [](const std::string& w) { std::fprintf(stderr, "teetrain: warning: %s\n", w.c_str()); });
  tee_session_->end_setup();  // every secret is out: wipe the session's link and group secrets
}

void TrainRun::open_data() {
  if (!img_) {
    data_ = open_token_data({o_.data, o_.seq, o_.seed, o_.ingress_gbps, model_vocab(o_.model)}, ts_,
                            at_rest_.dataset ? &*at_rest_.dataset : nullptr, rank_, profiler_);
    if (!data_.val && rank_ == 0)
      std::fprintf(stderr, "note: no validation split for --data %s; reporting training loss only\n",
                   o_.data.c_str());
    return;
  }
  // Sealed image sets open only now, with the released dataset key (their shape came from the clear
  // metadata).
  if (img_->sealed()) {
    img_->open_sealed(*at_rest_.dataset,
                      {ts_.direct_ingress ? IngressMode::Direct : IngressMode::Bounce, ts_.cipher,
                       static_cast<uint32_t>(rank_), o_.ingress_gbps},
                      &profiler_);
  }
  data_.train = img_->train;
  data_.val = img_->val;
  data_.describe = img_->describe;
}

// Emulated compute: the real model and optimizer run on an EmulatedBackend, whose ops are waits on the
// chosen GPU; gradients' bytes, buckets, ring, crypto and ingress stay real.
void TrainRun::build_model() {
  threads_ = default_threads(o_.threads);
  ranks_per_host_ = ranks_on_this_host();
  BackendOptions bo;
  bo.device = o_.device;
  bo.threads = threads_;
  bo.tf32 = o_.tf32;
  if (bo.device == DeviceKind::Cuda) bo.cuda_device = rank_ % std::max(1, cuda_device_count());
  const bool emulate = o_.compute == ComputeMode::Emulate;
  if (emulate) {
    bo.emulate = EmulatedGpu{gpu_spec(o_.gpu),  o_.gpu_precision, o_.gpu_tflops,
                             o_.gpu_efficiency, o_.gpu_aead_gbps, o_.gpu_act_traffic};
  }
  backend_ = make_backend(bo);
  model_ = make_model(*backend_, o_.model);
  // An emulated GPU's parameters are placeholders (its memory holds zeros): drawing 1.5B random
  // numbers on the host for gpt2-xl would only cost time and memory.
  if (!emulate) model_->init_params(o_.seed);
  if (emulate && rank_ == 0)
    std::fprintf(stderr, "COMPUTE EMULATED: %s runs on an %s; buckets, ring, crypto and ingress are real\n",
                 model_->name().c_str(), backend_->describe().c_str());
  tc_ = trainer_config(o_, static_cast<bool>(data_.val));
  tc_.metrics_path = rank_ == 0 ? o_.metrics : "";
  optimizer_ = make_optimizer(*backend_, tc_.opt, model_->num_params());
  if (o_.check_replicas > 0) {
    tc_.after_step = [this](long step) {
      if (step % o_.check_replicas == 0) dist_->check_replicas(*backend_, *model_, step);
    };
  }
}

// Checkpoints: rank 0 writes them (replicas are identical); every rank reads them on resume. They
// are sealed in TEE mode (the model, optimizer state and run state never rest in clear). The key
// owner's anti-rollback record (engine/freshness.h) needs the master key, which only rank 0 holds.
void TrainRun::setup_checkpoints() {
  codec_ = at_rest_.checkpoint ? make_sealed_codec(*at_rest_.checkpoint, ts_.cipher) : make_plain_codec();
  if (rank_ == 0 && at_rest_.checkpoint)
    freshness_.emplace(freshness_record_path(o_.tee.key_file), load_key_file(o_.tee.key_file));
  if (o_.save_every > 0 && rank_ == 0)
    store_ =
        std::make_unique<CheckpointStore>(o_.ckpt_dir, o_.keep, *codec_, freshness_ ? &*freshness_ : nullptr);
  tc_.save_checkpoint = [this](long step, uint64_t samples) {
    if (rank_ != 0) return;
    const CheckpointMeta meta{step, samples, o_.seed, params_sha256(*backend_, *model_), run_json_};
    const auto dir = store_->save(*backend_, *model_, optimizer_.get(), meta);
    if (tc_.progress) std::fprintf(stderr, "\ncheckpoint: %s\n", dir.c_str());
  };
}

void TrainRun::restore_or_broadcast() {
  if (o_.resume.empty()) {
    if (backend_->kind() != DeviceKind::Emulated)
      dist_->broadcast_params(*backend_, *model_);  // every replica starts from rank 0's parameters
    return;
  }
  const auto dir = CheckpointStore::resolve(o_.resume);
  // Every rank runs the checks of `teetrain ckpt verify` (manifest, digests, chunks, chain); rank 0
  // also refuses a rollback past the freshness record (the others get no record: nullptr).
  const VerifiedCheckpoint ck = open_verified_checkpoint(dir, codec_->key());
  const CheckpointMeta meta =
      CheckpointStore::load(ck, *backend_, *model_, optimizer_.get(), freshness_ ? &*freshness_ : nullptr);
  if (store_) store_->continue_lineage(ck);  // same run_id; the next save chains to this manifest
  if (meta.config.contains("model") && meta.config["model"] != run_json_["model"]) {
    throw InputError("--resume " + dir.string() + ": checkpoint model " + meta.config["model"].dump() +
                     " differs from this run's; use the same --model and shape flags");
  }
  start_step_ = meta.step;
  samples_ = meta.samples_consumed;
  if (start_step_ >= o_.steps) {
    throw InputError("--resume: the checkpoint is at step " + std::to_string(start_step_) +
                     "; --steps must be larger to continue");
  }
  if (rank_ == 0) {
    std::fprintf(stderr, "resumed from %s at step %ld%s\n", dir.c_str(), start_step_,
                 freshness_ && freshness_->exists() ? " (not older than the freshness record)" : "");
  }
}

// Gradient reduction on the reducer's communication thread: one path, chosen by the engine from the plan.
void TrainRun::build_reducer() {
  grads_.emplace(GradientSetup{plan_, ts_, *backend_, &*mpi_, wire_->transport(), *channel_,
                               tee_session_ ? &tee_session_->channel() : nullptr, ranks_per_host_,
                               profiler_});
  const std::size_t cap = static_cast<std::size_t>(o_.bucket_mb * 1024.0 * 1024.0);
  buckets_ = plan_buckets(model_->params(), model_->num_params(),
                          std::min<std::size_t>(std::size_t{1} << 20, cap), cap);
  if (world_ == 1) return;
  DdpOptions ddp{o_.overlap, world_};
  reducer_ = std::make_unique<DdpReducer>(*backend_, *model_, buckets_, grads_->fn(), ddp, &profiler_);
}

TrainResult TrainRun::run() {
  RankInfo ranks{rank_, world_, [this](double x) { return dist_->mean(x); }};
  Trainer trainer(*backend_, *model_, *optimizer_, profiler_, ranks, reducer_.get(), tc_, data_.train,
                  data_.val);
  return trainer.run(start_step_, samples_);
}

void TrainRun::print_banner() const {
  const double mem_gib = (static_cast<double>(model_->num_params()) * 4.0 * 4.0 +
                          static_cast<double>(model_->activation_bytes(o_.batch, o_.seq))) /
                         (1 << 30);
  std::fprintf(
      stderr,
      "teetrain train: %s (%zu params, %.2f GiB/rank) | %d rank(s) x %d thread(s) | %s | %zu bucket(s), "
      "allreduce %s, overlap %s\n  data %s\n  backend %s\n  gradients %s\n",
      model_->name().c_str(), model_->num_params(), mem_gib, world_, threads_, tee_label(o_.tee, ts_).c_str(),
      buckets_.size(), name(o_.allreduce), o_.overlap ? "on" : "off", data_.describe.c_str(),
      backend_->describe().c_str(), world_ > 1 ? grads_->path().c_str() : "not reduced (one rank)");
  if (attest_) std::fprintf(stderr, "  attestation %s\n", attestation_banner(*attest_, world_).c_str());
}

void TrainRun::finish(const TrainResult& r) {
  const nlohmann::json report = gather_phase_report(*dist_, profiler_, r.timed_steps);
  const std::string adversary_view = wire_->report();
  if (!o_.trace.empty()) {
    write_trace_part(o_.trace, rank_, profiler_.trace_events());
    dist_->mean(0.0);  // barrier: every part is on disk before rank 0 merges
    if (rank_ == 0) {
      const int parts = merge_trace_parts(o_.trace, world_);
      std::fprintf(stderr, "trace: %s (%d rank(s); open in https://ui.perfetto.dev or chrome://tracing)\n",
                   o_.trace.c_str(), parts);
    }
  }
  if (rank_ != 0) return;
  print_phase_table(report, r.step_seconds_mean);
  print_result(r, adversary_view);
  if (!o_.summary.empty()) write_summary(r, report);
}

void TrainRun::print_result(const TrainResult& r, const std::string& adversary_view) const {
  char val[32] = "none";  // no validation split, or --val-batches 0
  if (r.val_loss >= 0) std::snprintf(val, sizeof val, "%.4f", r.val_loss);
  std::fprintf(stderr, "done: %ld steps, loss %.4f, val_loss %s, %.0f %s, %.3f s/step, params_sha256 %s\n",
               r.steps, r.final_loss, val, r.items_per_s, img_ ? "images/s" : "tok/s", r.step_seconds_mean,
               r.params_sha256.c_str());
  if (r.val_accuracy >= 0) std::fprintf(stderr, "val_accuracy %.2f%%\n", 100.0 * r.val_accuracy);
  if (!adversary_view.empty()) std::fprintf(stderr, "%s", adversary_view.c_str());
  if (attest_ && !attestation_summary(*attest_, world_).warning.empty())
    std::fprintf(stderr, "%s\n", attestation_banner(*attest_, world_).c_str());
}

void TrainRun::write_summary(const TrainResult& r, const nlohmann::json& report) {
  const auto* emulated = dynamic_cast<const EmulatedBackend*>(backend_.get());
  nlohmann::json s = result_json(r, img_.has_value());
  s.update({{"num_params", model_->num_params()},
            {"world_size", world_},
            {"allreduce", name(o_.allreduce)},
            {"gradient_path", world_ > 1 ? grads_->path() : "none"},
            {"cc_transfer_us", grads_->cc_transfer_us()},
            {"bucket_mb", o_.bucket_mb},
            {"buckets", buckets_.size()},
            {"overlap", o_.overlap ? "on" : "off"},
            {"tee", tee_json(o_.tee, gpu_gradients(o_))},
            {"rekeys", tee_session_ ? tee_session_->channel().rekeys() : 0},
            {"attestation", attestation_json(attest_, world_)},
            {"bytes_sent", report["counters"]["bytes_sent"]},
            {"phases", report["phases"]},
            {"phases_accounted_s", main_thread_seconds(report)},
            {"counters", report["counters"]},
            {"backend", backend_->describe()},
            {"threads", threads_},
            {"host_cores", host_cores()},
            {"ranks_per_host", ranks_per_host_},
            {"compute", name(o_.compute)},
            {"gpu", emulated ? nlohmann::json(emulated->gpu().describe()) : nlohmann::json(nullptr)},
            {"config", run_json_}});
  std::ofstream f(o_.summary);
  if (!f) throw InputError("--summary " + o_.summary + ": cannot open for writing");
  f << s.dump(2) << '\n';
}

// The CLI's part: build the run, train, report.
void run_train(const TrainOptions& opts) {
  TrainRun run(opts);
  const TrainResult r = run.run();
  run.finish(r);
}

}  // namespace

void register_train(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model (one rank, or data-parallel under mpirun)");
  add_train_options(cmd, *opts);
  cmd->callback([opts] { run_train(*opts); });
}

}  // namespace tt::cli
