// `teetrain train`: wires MPI, the model, data, optimizer, reducer and trainer together on each rank.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "comm/mpi_transport.h"
#include "comm/sealed_channel.h"
#include "comm/secure_session.h"
#include "data/sealed_tokens.h"
#include "data/token_loader.h"
#include "engine/adversary_wire.h"
#include "engine/at_rest_keys.h"
#include "engine/checkpoint.h"
#include "engine/core/backend_factory.h"
#include "engine/core/error.h"
#include "engine/ddp_reducer.h"
#include "engine/dist_context.h"
#include "engine/emulated_model.h"
#include "engine/freshness.h"
#include "engine/gradient_reduction.h"
#include "engine/key_file.h"
#include "engine/sealed_codec.h"
#include "engine/tee_session.h"
#include "engine/token_source.h"
#include "engine/trace_writer.h"
#include "engine/trainer.h"
#include "study/emulated_gpt2.h"
#include "tools/cli/commands.h"
#include "tools/cli/image_source.h"
#include "tools/cli/run_report.h"
#include "tools/cli/train_options.h"

namespace tt::cli {
namespace {

// Ranks sharing this host split its cores between them unless --threads says otherwise.
int ranks_on_this_host() {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_ranks = 1;
  MPI_Comm_size(local, &local_ranks);
  MPI_Comm_free(&local);
  return local_ranks;
}

int host_cores() {
  return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

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
  tc.lr =
      LrSchedule{o.lr, o.min_lr_frac, o.warmup, o.steps, o.schedule == "constant" ? "constant" : "cosine"};
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

void run_train(const TrainOptions& opts) {
  // Image models take their input shape and classes from the data and have no sequence length:
  // resolve both before the configuration is hashed for the cross-rank agreement.
  TrainOptions o = opts;
  std::optional<ImageSource> img;
  if (is_image_model(o.model)) {
    img.emplace(open_image_source(
        {o.data, o.seed, /*augment=*/false, o.tee.settings.mode != TeeMode::Off, o.tee.allow_plain_data}));
    o.model.image_channels = img->channels;
    o.model.image_size = img->image_size;
    o.model.num_classes = img->classes;
    o.seq = 0;
  }
  const RunPlan plan = run_plan(o);
  validate(plan);  // every conflicting choice in one message (exit 2)
  const TeeSwitches ts = plan.switches();
  comm::MpiTransport mpi_transport(MPI_COMM_WORLD,
                                   std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000.0)));
  // Every message between ranks goes through `transport`: MPI, or --adversary's attacker on it.
  AdversaryWire wire(mpi_transport, o.tee.adversary, ts.on);
  comm::Transport& transport = wire.transport();
  if (wire.active() && transport.rank() == 0) std::fprintf(stderr, "%s\n", wire.banner().c_str());
  const int rank = transport.rank();
  const int world = transport.size();
  o.steps = steps_for_epochs(o, img ? &*img : nullptr, world);  // --epochs N -> steps
  Profiler profiler(/*trace=*/!o.trace.empty());
  const nlohmann::json run_json = train_options_json(o);
  // In TEE mode: attest the ring neighbours, agree keys, and build the one sealed channel that carries
  // every message between ranks from then on (gradients, broadcasts, agreement, replica checks).
  std::optional<comm::AttestConfig> attest;
  std::optional<TeeSession> tee_session;
  if (ts.on) {
    attest = make_attest_config(o.tee.trust, rank, world, run_json.dump());
    tee_session.emplace(
        transport, *attest,
        TeeChannelOptions{ts.cipher, o.tee.settings.rekey_mb, static_cast<std::size_t>(ts.crypto_threads)},
        &profiler);
  }
  comm::PlainChannel plain;
  comm::Channel& channel = tee_session ? static_cast<comm::Channel&>(tee_session->channel()) : plain;
  DistContext dist(transport, channel, &profiler);
  dist.agree_config(run_json.dump());

  const bool sealed_data =
      ts.on && (img ? img->sealed() : require_sealed_data(o.data, "train", o.tee.allow_plain_data));
  const bool need_ckpt_key = ts.on && (o.save_every > 0 || !o.resume.empty());
  const AtRestKeys at_rest =
      ts.on ? release_at_rest_keys(
                  transport, tee_session->keys(), o.tee.key_file, sealed_data, need_ckpt_key,
                  [](const std::string& w) { std::fprintf(stderr, "teetrain: warning: %s\n", w.c_str()); })
            : AtRestKeys{};
  if (tee_session)
    tee_session->end_setup();  // every secret is out: wipe the session's link and group secrets
  DataSource data;
  if (img) {
    // Sealed image sets open only now, with the released dataset key (their shape came from the clear
    // metadata).
    if (img->sealed()) {
      img->open_sealed(*at_rest.dataset,
                       {ts.direct_ingress ? IngressMode::Direct : IngressMode::Bounce, ts.cipher,
                        static_cast<uint32_t>(rank), o.ingress_gbps},
                       &profiler);
    }
    data.train = img->train;
    data.val = img->val;
    data.describe = img->describe;
  } else {
    data = open_token_data({o.data, o.seq, o.seed, o.ingress_gbps, model_vocab(o.model)}, ts,
                           at_rest.dataset ? &*at_rest.dataset : nullptr, rank, profiler);
    if (!data.val && rank == 0)
      std::fprintf(stderr, "note: no validation split for --data %s; reporting training loss only\n",
                   o.data.c_str());
  }

  const int threads = default_threads(o.threads);
  const int ranks_per_host = ranks_on_this_host();
  BackendOptions bo;
  bo.device = o.device;
  bo.threads = threads;
  bo.tf32 = o.tf32;
  if (bo.device == DeviceKind::Cuda) bo.cuda_device = rank % std::max(1, cuda_device_count());
  std::unique_ptr<Backend> backend = make_backend(bo);
  // Emulated compute: forward/backward become waits from the model's FLOPs on the chosen GPU, and
  // the optimizer a wait at its memory bandwidth; gradients, buckets, ring, crypto and ingress stay real.
  const bool emulate = o.compute == ComputeMode::Emulate;
  std::unique_ptr<Model> model;
  std::optional<EmulatedGpu> gpu;
  if (emulate) {
    gpu = EmulatedGpu{gpu_spec(o.gpu),  o.gpu_precision, o.gpu_tflops,
                      o.gpu_efficiency, o.gpu_aead_gbps, o.gpu_act_traffic};
    auto emu = std::make_unique<EmulatedModel>(
        *backend, study::emulated_model_config(model_config_json(o.model), *gpu));
    if (rank == 0) std::fprintf(stderr, "%s\n", emu->describe().c_str());
    model = std::move(emu);
  } else {
    model = make_model(*backend, o.model);
    model->init_params(o.seed);
  }
  TrainConfig tc = trainer_config(o, static_cast<bool>(data.val));
  tc.metrics_path = rank == 0 ? o.metrics : "";
  tc.grad_norm = !emulate;
  std::unique_ptr<Optimizer> optimizer = emulate
                                             ? std::make_unique<EmulatedOptimizer>(model->num_params(), *gpu)
                                             : make_optimizer(*backend, tc.opt, model->num_params());

  // Checkpoints: rank 0 writes them (replicas are identical); every rank reads them on resume.
  // Checkpoints are sealed in TEE mode (the model, optimizer state and run state never rest in clear).
  std::unique_ptr<FileCodec> codec =
      at_rest.checkpoint ? make_sealed_codec(*at_rest.checkpoint, ts.cipher) : make_plain_codec();
  // The key owner's anti-rollback record (engine/freshness.h) needs the master key, which only rank 0
  // holds: rank 0 checks it on resume and updates it at every save; a refusal stops the job (exit 3).
  std::optional<FreshnessRecord> freshness;
  if (rank == 0 && at_rest.checkpoint)
    freshness.emplace(freshness_record_path(o.tee.key_file), load_key_file(o.tee.key_file));
  std::unique_ptr<CheckpointStore> store;
  if (o.save_every > 0 && rank == 0)
    store = std::make_unique<CheckpointStore>(o.ckpt_dir, o.keep, *codec, freshness ? &*freshness : nullptr);
  tc.save_checkpoint = [&](long step, uint64_t samples) {
    if (rank != 0) return;
    const CheckpointMeta meta{step, samples, o.seed, params_sha256(*backend, *model), run_json};
    const auto dir = store->save(*backend, *model, optimizer.get(), meta);
    if (tc.progress) std::fprintf(stderr, "\ncheckpoint: %s\n", dir.c_str());
  };
  long start_step = 0;
  uint64_t samples = 0;
  if (!o.resume.empty()) {
    const auto dir = CheckpointStore::resolve(o.resume);
    // Every rank runs the checks of `teetrain ckpt verify` (manifest, digests, chunks, chain).
    const VerifiedCheckpoint ck = open_verified_checkpoint(dir, codec->key());
    // Rank 0 also refuses a rollback past the freshness record (the others get no record: nullptr).
    const CheckpointMeta meta =
        CheckpointStore::load(ck, *backend, *model, optimizer.get(), freshness ? &*freshness : nullptr);
    if (store) store->continue_lineage(ck);  // same run_id; the next save chains to this manifest
    if (meta.config.contains("model") && meta.config["model"] != run_json["model"]) {
      throw InputError("--resume " + dir.string() + ": checkpoint model " + meta.config["model"].dump() +
                       " differs from this run's; use the same --model and shape flags");
    }
    start_step = meta.step;
    samples = meta.samples_consumed;
    if (start_step >= o.steps) {
      throw InputError("--resume: the checkpoint is at step " + std::to_string(start_step) +
                       "; --steps must be larger to continue");
    }
    if (rank == 0) {
      std::fprintf(stderr, "resumed from %s at step %ld%s\n", dir.c_str(), start_step,
                   freshness && freshness->exists() ? " (not older than the freshness record)" : "");
    }
  } else if (!emulate) {
    dist.broadcast_params(*backend, *model);  // every replica starts from rank 0's parameters
  }
  if (o.check_replicas > 0) {
    tc.after_step = [&](long step) {
      if (step % o.check_replicas == 0) dist.check_replicas(*backend, *model, step);
    };
  }

  // Gradient reduction on the reducer's communication thread: one path, chosen from the options.
  GradientReduction grads({plan, ts, *backend, mpi_transport, transport, channel,
                           tee_session ? &tee_session->channel() : nullptr, gpu ? &*gpu : nullptr,
                           ranks_per_host, profiler});
  const std::size_t cap = static_cast<std::size_t>(o.bucket_mb * 1024.0 * 1024.0);
  const std::vector<Bucket> buckets = plan_buckets(model->params(), model->num_params(),
                                                   std::min<std::size_t>(std::size_t{1} << 20, cap), cap);
  std::unique_ptr<DdpReducer> reducer;
  if (world > 1) {
    DdpOptions ddp{o.overlap, world};
    ddp.emulated_average = grads.emulated_average();
    reducer = std::make_unique<DdpReducer>(*backend, *model, buckets, grads.fn(), ddp, &profiler);
  }

  if (rank == 0) {
    const double mem_gib = (static_cast<double>(model->num_params()) * 4.0 * 4.0 +
                            static_cast<double>(model->activation_bytes(o.batch, o.seq))) /
                           (1 << 30);
    std::fprintf(
        stderr,
        "teetrain train: %s (%zu params, %.2f GiB/rank) | %d rank(s) x %d thread(s) | %s | %zu bucket(s), "
        "allreduce %s, overlap %s\n  data %s\n  backend %s\n  gradients %s\n",
        model->name().c_str(), model->num_params(), mem_gib, world, threads, tee_label(o.tee, ts).c_str(),
        buckets.size(), name(o.allreduce), o.overlap ? "on" : "off", data.describe.c_str(),
        backend->describe().c_str(), world > 1 ? grads.path().c_str() : "not reduced (one rank)");
    if (attest) std::fprintf(stderr, "  attestation %s\n", attestation_banner(*attest, world).c_str());
  }

  RankInfo ranks{rank, world, [&](double x) { return dist.mean(x); }};
  Trainer trainer(*backend, *model, *optimizer, profiler, ranks, reducer.get(), tc, data.train, data.val);
  const TrainResult r = trainer.run(start_step, samples);

  const nlohmann::json report = gather_phase_report(dist, profiler, r.timed_steps);
  const std::string adversary_view = wire.report();
  if (!o.trace.empty()) {
    write_trace_part(o.trace, rank, profiler.trace_events());
    dist.mean(0.0);  // barrier: every part is on disk before rank 0 merges
    if (rank == 0) {
      const int parts = merge_trace_parts(o.trace, world);
      std::fprintf(stderr, "trace: %s (%d rank(s); open in https://ui.perfetto.dev or chrome://tracing)\n",
                   o.trace.c_str(), parts);
    }
  }
  if (rank != 0) return;
  print_phase_table(report, r.step_seconds_mean);
  char val[32] = "none";  // no validation split, or --val-batches 0
  if (r.val_loss >= 0) std::snprintf(val, sizeof val, "%.4f", r.val_loss);
  std::fprintf(stderr, "done: %ld steps, loss %.4f, val_loss %s, %.0f %s, %.3f s/step, params_sha256 %s\n",
               r.steps, r.final_loss, val, r.items_per_s, img ? "images/s" : "tok/s", r.step_seconds_mean,
               r.params_sha256.c_str());
  if (r.val_accuracy >= 0) std::fprintf(stderr, "val_accuracy %.2f%%\n", 100.0 * r.val_accuracy);
  if (!adversary_view.empty()) std::fprintf(stderr, "%s", adversary_view.c_str());
  if (attest && !attestation_summary(*attest, world).warning.empty())
    std::fprintf(stderr, "%s\n", attestation_banner(*attest, world).c_str());
  if (!o.summary.empty()) {
    nlohmann::json s = result_json(r, img.has_value());
    s.update({{"num_params", model->num_params()},
              {"world_size", world},
              {"allreduce", name(o.allreduce)},
              {"gradient_path", world > 1 ? grads.path() : "none"},
              {"cc_transfer_us", grads.cc_transfer_us()},
              {"bucket_mb", o.bucket_mb},
              {"buckets", buckets.size()},
              {"overlap", o.overlap ? "on" : "off"},
              {"tee", tee_json(o.tee, gpu_gradients(o))},
              {"rekeys", tee_session ? tee_session->channel().rekeys() : 0},
              {"attestation", attestation_json(attest, world)},
              {"bytes_sent", report["counters"]["bytes_sent"]},
              {"phases", report["phases"]},
              {"phases_accounted_s", main_thread_seconds(report)},
              {"counters", report["counters"]},
              {"backend", backend->describe()},
              {"threads", threads},
              {"host_cores", host_cores()},
              {"ranks_per_host", ranks_per_host},
              {"compute", name(o.compute)},
              {"gpu", gpu ? nlohmann::json(gpu->describe()) : nlohmann::json(nullptr)},
              {"config", run_json}});
    std::ofstream f(o.summary);
    if (!f) throw InputError("--summary " + o.summary + ": cannot open for writing");
    f << s.dump(2) << '\n';
  }
}

}  // namespace

void register_train(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model (one rank, or data-parallel under mpirun)");
  add_train_options(cmd, *opts);
  cmd->callback([opts] { run_train(*opts); });
}

}  // namespace tt::cli
