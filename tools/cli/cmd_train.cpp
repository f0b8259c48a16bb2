// `teetrain train`: wires the model, data, optimizer, reducer and trainer together for one rank.
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "data/token_loader.h"
#include "engine/checkpoint.h"
#include "engine/core/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/trainer.h"
#include "tools/cli/commands.h"
#include "tools/cli/validators.h"
#include "tools/cli/model_registry.h"

namespace tt::cli {
namespace {

struct TrainOptions {
  ModelOptions model;
  std::string data = "data-cache/fortunes";
  long steps = 200;
  int batch = 8;
  int seq = 128;
  int grad_accum = 1;
  float lr = 1e-3f;
  float min_lr_frac = 0.1f;
  long warmup = 20;
  std::string schedule = "cosine";
  float grad_clip = 1.0f;
  float weight_decay = 0.1f;
  std::string optimizer = "adamw";
  float momentum = 0.9f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  uint64_t seed = 1337;
  int threads = 0;
  long val_every = 0;
  int val_batches = 8;
  std::string metrics;
  std::string summary;
  long save_every = 0;
  std::string ckpt_dir = "runs/ckpt";
  int keep = 3;
  std::string resume;
  bool no_progress = false;
};

void add_options(CLI::App* cmd, TrainOptions& o) {
  add_model_options(cmd, o.model);
  cmd->add_option("--data", o.data,
                  "Token shards: a prefix (<data>_train.bin/_val.bin), a directory of llm.c shards, a file or a glob")
      ->capture_default_str();
  cmd->add_option("--steps", o.steps, "Optimizer steps to run (in total, counting resumed ones)")
      ->check(positive())->capture_default_str();
  cmd->add_option("--batch", o.batch, "Sequences per rank and micro-step")->check(positive())->capture_default_str();
  cmd->add_option("--seq", o.seq, "Tokens per sequence (at most the model's context)")->check(positive())->capture_default_str();
  cmd->add_option("--grad-accum", o.grad_accum, "Micro-steps accumulated per optimizer step")->check(positive())->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->check(positive())->capture_default_str();
  cmd->add_option("--min-lr-frac", o.min_lr_frac, "Final LR of the cosine schedule as a fraction of --lr")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Linear warmup steps")->check(non_negative())->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "LR schedule")->check(CLI::IsMember({"cosine", "constant"}))->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "Clip the global gradient norm to this (0 = off)")->check(non_negative())->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "Weight decay on matrices (not biases or norms)")->check(non_negative())->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "Optimizer")->check(CLI::IsMember({"adamw", "sgd"}))->capture_default_str();
  cmd->add_option("--momentum", o.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--beta1", o.beta1, "AdamW beta1")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--beta2", o.beta2, "AdamW beta2")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for initialisation and data order")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Compute threads per rank (0 = cores / ranks on this host)")->check(non_negative())->capture_default_str();
  cmd->add_option("--val-every", o.val_every, "Validate every N steps (0 = only at the end)")->check(non_negative())->capture_default_str();
  cmd->add_option("--val-batches", o.val_batches, "Batches per validation")->check(non_negative())->capture_default_str();
  cmd->add_option("--metrics", o.metrics, "Write per-step metrics as JSON lines to FILE");
  cmd->add_option("--summary", o.summary, "Write the end-of-run summary as JSON to FILE");
  cmd->add_option("--save-every", o.save_every, "Checkpoint every N steps and at the end (0 = never)")->check(non_negative())->capture_default_str();
  cmd->add_option("--ckpt-dir", o.ckpt_dir, "Checkpoint directory (one step_XXXXXXXX/ per checkpoint)")->capture_default_str();
  cmd->add_option("--keep", o.keep, "Checkpoints to keep")->check(positive())->capture_default_str();
  cmd->add_option("--resume", o.resume, "Resume from a checkpoint directory (a step dir, or the newest in a --ckpt-dir)");
  cmd->add_flag("--no-progress", o.no_progress, "No live progress line");
}

int default_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

void run_train(const TrainOptions& o) {
  const int context = model_context(o.model);
  if (o.seq > context) {
    throw InputError("--seq " + std::to_string(o.seq) + " is longer than the model's context (" + std::to_string(context) +
                     "); use --seq <= " + std::to_string(context) + " or --context");
  }
  const TokenDataset train_ds = TokenDataset::open(o.data, "train");
  const int vocab = model_vocab(o.model);
  if (train_ds.vocab() > vocab) {
    throw InputError("--data " + o.data + " holds vocabulary " + std::to_string(train_ds.vocab()) + " but the model's is " +
                     std::to_string(vocab) + "; use --vocab " + std::to_string(train_ds.vocab()));
  }
  std::unique_ptr<TokenDataset> val_ds;
  try {
    val_ds = std::make_unique<TokenDataset>(TokenDataset::open(o.data, "val"));
  } catch (const InputError&) {
    std::fprintf(stderr, "note: no validation split found for --data %s; reporting training loss only\n", o.data.c_str());
  }
  TokenLoader train_loader(train_ds, o.seq, o.seed, /*shuffle=*/true);
  std::unique_ptr<TokenLoader> val_loader;
  if (val_ds) val_loader = std::make_unique<TokenLoader>(*val_ds, o.seq, o.seed, /*shuffle=*/false);

  const int threads = default_threads(o.threads);
  std::unique_ptr<Backend> backend = make_cpu_backend(threads);
  std::unique_ptr<Model> model = make_model(*backend, o.model);
  model->init_params(o.seed);

  OptimizerConfig oc{o.optimizer, o.beta1, o.beta2, 1e-8f, o.momentum, o.weight_decay};
  std::unique_ptr<Optimizer> optimizer = make_optimizer(*backend, oc, model->num_params());

  TrainConfig tc;
  tc.steps = o.steps;
  tc.batch = o.batch;
  tc.seq = o.seq;
  tc.grad_accum = o.grad_accum;
  tc.lr = LrSchedule{o.lr, o.min_lr_frac, o.warmup, o.steps, o.schedule == "constant" ? "constant" : "cosine"};
  tc.grad_clip = o.grad_clip;
  tc.opt = oc;
  tc.seed = o.seed;
  tc.val_every = o.val_every;
  tc.val_batches = val_loader ? o.val_batches : 0;
  tc.progress = !o.no_progress;
  tc.metrics_path = o.metrics;
  tc.save_every = o.save_every;

  const nlohmann::json model_json = model_config_json(o.model);
  nlohmann::json run_json = {{"model", model_json}, {"batch", o.batch}, {"seq", o.seq}, {"grad_accum", o.grad_accum},
                             {"lr", o.lr},          {"optimizer", o.optimizer}, {"seed", o.seed}, {"steps", o.steps}};

  std::unique_ptr<FileCodec> codec = make_plain_codec();
  std::unique_ptr<CheckpointStore> store;
  if (o.save_every > 0) store = std::make_unique<CheckpointStore>(o.ckpt_dir, o.keep, *codec);
  tc.save_checkpoint = [&](long step, uint64_t samples) {
    CheckpointMeta meta{step, samples, o.seed, params_sha256(*backend, *model), run_json};
    const auto dir = store->save(*backend, *model, optimizer.get(), meta);
    if (tc.progress) std::fprintf(stderr, "\ncheckpoint: %s\n", dir.c_str());
  };

  long start_step = 0;
  uint64_t samples = 0;
  if (!o.resume.empty()) {
    const auto dir = CheckpointStore::resolve(o.resume);
    const CheckpointMeta meta = CheckpointStore::load(dir, *codec, *backend, *model, optimizer.get());
    if (meta.config.contains("model") && meta.config["model"] != model_json) {
      throw InputError("--resume " + dir.string() + ": checkpoint model " + meta.config["model"].dump() +
                       " differs from this run's; use the same --model and shape flags");
    }
    start_step = meta.step;
    samples = meta.samples_consumed;
    if (start_step >= o.steps) throw InputError("--resume: checkpoint is at step " + std::to_string(start_step) + ", not before --steps " + std::to_string(o.steps));
    std::fprintf(stderr, "resumed from %s at step %ld\n", dir.c_str(), start_step);
  }

  std::fprintf(stderr, "teetrain train: %s (%zu params) | %s | backend %s\n", model->name().c_str(), model->num_params(),
               train_ds.describe().c_str(), backend->describe().c_str());

  Profiler profiler;
  auto train_fn = [&](Batch& b, uint64_t first, int count) { train_loader.fill(b, first, count); };
  BatchFn val_fn;
  if (val_loader) val_fn = [&](Batch& b, uint64_t first, int count) { val_loader->fill(b, first, count); };
  Trainer trainer(*backend, *model, *optimizer, profiler, RankInfo{}, nullptr, tc, train_fn, val_fn);
  const TrainResult r = trainer.run(start_step, samples);

  std::fprintf(stderr, "done: %ld steps, loss %.4f, val_loss %.4f, %.0f tok/s, %.3f s/step, params_sha256 %s\n", r.steps,
               r.final_loss, r.val_loss, r.items_per_s, r.step_seconds_mean, r.params_sha256.c_str());
  if (!o.summary.empty()) {
    nlohmann::json s = {{"steps", r.steps},
                        {"final_loss", r.final_loss},
                        {"val_loss", r.val_loss},
                        {"tokens_per_s", r.items_per_s},
                        {"step_s_mean", r.step_seconds_mean},
                        {"train_seconds", r.seconds},
                        {"params_sha256", r.params_sha256},
                        {"num_params", model->num_params()},
                        {"backend", backend->describe()},
                        {"threads", threads},
                        {"config", run_json}};
    std::ofstream f(o.summary);
    if (!f) throw InputError("--summary " + o.summary + ": cannot open for writing");
    f << s.dump(2) << '\n';
  }
}

}  // namespace

void register_train(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model (one rank, or data-parallel under mpirun)");
  add_options(cmd, *opts);
  cmd->callback([opts] { run_train(*opts); });
}

}  // namespace tt::cli
