// The training loop: data -> forward -> backward (gradients handed to the reducer as they become
// final) -> optimizer, with metrics, validation, checkpoints and a summary. Model-agnostic: it sees
// the model only through tt::Model and the data only through BatchFn.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/backend.h"
#include "core/model.h"
#include "core/profiler.h"
#include "engine/grad_reducer.h"
#include "engine/lr_schedule.h"
#include "engine/optimizer.h"
#include "tee/unique_fd.h"

namespace tt {

// Fills `out` with samples [first_sample, first_sample + count) of the run's sample stream.
using BatchFn = std::function<void(Batch& out, uint64_t first_sample, int count)>;

// The trainer's part of a run's options (engine/run/train_options.h): how many steps of what batch, the
// learning rate and its schedule, the optimizer, the seed, validation, and the steps left out of the
// timing.
struct ScheduleOptions {
  long steps = 200;
  long epochs = 0;  // > 0: the run plan turns it into steps (engine/run/run_plan.h); the trainer reads steps
  int batch = 8;    // per rank and micro-step
  int seq = 128;    // tokens per sample (0 for image models)
  int grad_accum = 1;
  float lr = 1e-3f;  // peak
  float min_lr_frac = 0.1f;
  long warmup = 20;
  ScheduleKind schedule = ScheduleKind::Cosine;
  float grad_clip = 1.0f;  // max global gradient norm; <= 0 disables clipping
  OptimizerConfig optimizer{.kind = OptimizerKind::AdamW,
                            .beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .momentum = 0.9f,
                            .weight_decay = 0.1f};
  uint64_t seed = 1337;
  long val_every = 0;   // 0: validate only at the end
  int val_batches = 8;  // 0, or data without a validation split: no validation
  // The first N steps of this run warm up (allocations, first touch of buffers, caches) and are left out
  // of the step time and phase times (--timing-warmup); counters still count every step.
  long timing_warmup = 0;

  LrSchedule lr_schedule() const { return {lr, min_lr_frac, warmup, steps, schedule}; }
};

struct TrainConfig {
  ScheduleOptions schedule;
  bool progress = true;      // live progress line on stderr
  std::string metrics_path;  // JSON lines, one per step
  long save_every = 0;       // checkpoint every N steps (0: never)
  std::function<void(long step, uint64_t samples_consumed)> save_checkpoint;  // set by the caller
  // Called after every optimizer step (1-based step), e.g. for replica checks. May throw to stop.
  std::function<void(long step)> after_step;
  // Every rank hashes its parameters at the end (TrainResult::params_sha256); false: none does, and
  // the digest reads "none" — an emulated GPU's parameters are placeholders aliased onto a little
  // memory (core/emulated/aliased_memory.h), so their digest would describe nothing, and
  // hashing gpt2-xl's 6 GB took longer than a virtual-time run itself.
  bool digest_params = true;
};

// Cross-rank operations the trainer needs; single-rank runs use the identity.
struct RankInfo {
  int rank = 0;
  int world = 1;
  // The ranks whose batches a step's throughput counts: `world`, or the modelled ring's when folded
  // (Note [Folded ring], comm/allreduce/ring_geometry.h; 0: world).
  int modelled_world = 0;
  std::function<double(double)> mean_across_ranks = [](double x) { return x; };
  // Virtual time: every rank's clock moves to the latest rank's (a barrier in virtual time).
  std::function<void()> sync_clocks = [] {};
};

struct TrainResult {
  long steps = 0;
  double final_loss = 0;     // training loss of the last step (mean across ranks)
  double val_loss = -1;      // last validation loss (-1 if no validation data)
  double val_accuracy = -1;  // last validation accuracy in [0, 1] (-1 if none or not a classifier)
  double items_per_s = 0;    // tokens/s (token models) or samples/s (image models), global
  double seconds = 0;        // time of the timed steps (the run's clock: wall or virtual)
  double step_seconds_mean = 0;
  long timed_steps = 0;  // steps behind seconds and the profiler's phase times (warm-up excluded)
  std::string params_sha256;
  bool virtual_time = false;  // the times above are computed for a modelled platform (--time virtual)
};

class Trainer {
 public:
  Trainer(Backend& backend, Model& model, Optimizer& optimizer, Profiler& profiler, RankInfo ranks,
          GradReducer* reducer, TrainConfig cfg, BatchFn train_data, BatchFn val_data);

  // Runs steps [start_step, cfg.steps). samples_consumed is the run-wide data position at start_step.
  TrainResult run(long start_step = 0, uint64_t samples_consumed = 0);
  struct Validation {
    double loss = -1;      // mean loss per term (-1: no validation data)
    double accuracy = -1;  // fraction correct (-1: not a classifier)
  };
  // Loss (and accuracy) over cfg.val_batches validation batches, shared out across ranks, with the
  // model in evaluation mode (batch norm uses its running statistics).
  Validation validate();

 private:
  float train_step(long step, uint64_t first_sample);
  void print_progress(long step, double loss, double items_per_s, double eta_s, bool final_line);
  // What one step's report needs: the progress line and the --metrics record.
  struct StepLog {
    long step;              // 1-based
    double loss;            // mean across ranks
    double step_s;          // this step's train_step and loss mean
    double items_per_step;  // tokens (or samples), global
    double mean_s;          // mean time per timed step so far (throughput and ETA)
    bool last;
  };
  Validation validate_if_due(long step, bool last, TrainResult& res);
  void report_step(const StepLog& s, const Validation& val, const tee::UniqueFd& metrics);

  Backend& backend_;
  Model& model_;
  Optimizer& optimizer_;
  Profiler& profiler_;
  RankInfo ranks_;
  GradReducer* reducer_;
  TrainConfig cfg_;
  LrSchedule lr_;  // cfg_.schedule's
  BatchFn train_data_;
  BatchFn val_data_;
  Batch batch_;
  double last_grad_norm_ = 0;
};

}  // namespace tt
