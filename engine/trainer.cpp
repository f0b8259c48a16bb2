#include "engine/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "base/host_memory.h"
#include "engine/param_chunks.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/regular_file.h"

namespace tt {
namespace {

// The model reports its units to `gate` while this lives (ZeRO-3; Note [Parameter units], core/model.h):
// a training step's forward and backward, not validation's forward or sampling.
class GateScope {
 public:
  GateScope(Model& model, UnitGate* gate) : model_(model) { model_.set_unit_gate(gate); }
  ~GateScope() { model_.set_unit_gate(nullptr); }
  GateScope(const GateScope&) = delete;
  GateScope& operator=(const GateScope&) = delete;

 private:
  Model& model_;
};

}  // namespace

Trainer::Trainer(Backend& backend, Model& model, Optimizer& optimizer, Profiler& profiler, RankInfo ranks,
                 GradReducer* reducer, TrainConfig cfg, BatchFn train_data, BatchFn val_data)
    : backend_(backend),
      model_(model),
      optimizer_(optimizer),
      profiler_(profiler),
      ranks_(std::move(ranks)),
      reducer_(reducer),
      cfg_(std::move(cfg)),
      lr_(cfg_.schedule.lr_schedule()),
      train_data_(std::move(train_data)),
      val_data_(std::move(val_data)) {
  model_.reserve(cfg_.schedule.batch, cfg_.schedule.seq);
}

float Trainer::train_step(long step, uint64_t first_sample) {
  const int B = cfg_.schedule.batch;
  const int K = cfg_.schedule.grad_accum;
  const uint64_t per_micro = static_cast<uint64_t>(B) * static_cast<uint64_t>(ranks_.world);
  {
    // A pass over every gradient, like the update: timed with the optimizer (as PyTorch's
    // optimizer.zero_grad()), so that the scaling model's compute time includes it.
    ScopedPhase t(&profiler_, Phase::Optimizer, Lane::Compute, "zero grad");
    if (reducer_ == nullptr || !reducer_->zero_grads()) model_.zero_grad();
  }
  double loss_sum = 0;
  const GateScope gate(model_, reducer_ != nullptr ? reducer_->unit_gate() : nullptr);
  for (int k = 0; k < K; ++k) {
    if (reducer_ != nullptr) reducer_->begin_micro_step(step, k);
    {
      ScopedPhase t(&profiler_, Phase::Data);
      // Rank r of micro-step k takes samples [first + k*B*P + r*B, +B): disjoint across ranks and
      // identical in union to a single-rank run with batch B*P*K.
      train_data_(
          batch_,
          first_sample + static_cast<uint64_t>(k) * per_micro + static_cast<uint64_t>(ranks_.rank * B), B);
    }
    float loss = 0;
    {
      ScopedPhase t(&profiler_, Phase::Forward);
      loss = model_.forward(batch_);
    }
    const bool last = (k == K - 1);
    if (last && reducer_ != nullptr) reducer_->begin_step(step);
    {
      ScopedPhase t(&profiler_, Phase::Backward);
      if (last && reducer_ != nullptr) {
        model_.backward([this](std::size_t from) { reducer_->on_grad_ready(from); });
      } else {
        model_.backward({});
      }
      // With no reducer nothing runs beside the backward: its queued GPU work is waited for here, so
      // the phase holds it (the optimizer's gradient norm would otherwise wait for it and be charged).
      if (reducer_ == nullptr) backend_.synchronize();
    }
    loss_sum += loss;
  }
  if (reducer_ != nullptr) {
    ScopedPhase t(&profiler_, Phase::CommExposed);
    reducer_->finish_step();  // gradients are now the mean over ranks
  }
  {
    ScopedPhase t(&profiler_, Phase::Optimizer);
    // Each micro-step's loss is a mean, so the accumulated gradient is K times the mean gradient.
    const float accum_scale = 1.0f / static_cast<float>(K);
    const double sum_squares = reducer_ != nullptr
                                   ? reducer_->grad_sum_squares()
                                   : backend_.sum_squares(model_.grad_data(), model_.num_params());
    const double norm = std::sqrt(sum_squares) * static_cast<double>(accum_scale);
    if (!std::isfinite(norm)) {
      throw RunError("step " + std::to_string(step + 1) + ": gradient norm is not finite (" +
                     std::to_string(norm) + "); lower --lr or enable --grad-clip");
    }
    float scale = accum_scale;
    if (cfg_.schedule.grad_clip > 0.0f && norm > static_cast<double>(cfg_.schedule.grad_clip)) {
      scale *= static_cast<float>(static_cast<double>(cfg_.schedule.grad_clip) / (norm + 1e-6));
    }
    last_grad_norm_ = norm;
    optimizer_.step(model_, lr_.at(step), scale, step + 1);
    backend_.synchronize();  // a queued optimizer (GPU) belongs to this phase, not the next step's forward
  }
  if (reducer_ != nullptr && reducer_->shards()) {
    // A sharded run's updated shards travel to every rank before the next forward (blocking).
    ScopedPhase t(&profiler_, Phase::CommExposed, Lane::Compute, "parameter all-gather");
    reducer_->finish_update();
  }
  return static_cast<float>(loss_sum / K);
}

Trainer::Validation Trainer::validate() {
  if (!val_data_ || cfg_.schedule.val_batches <= 0) return {};
  // Mean of per-batch mean losses (as before evaluate() existed: token models keep their numbers
  // bit for bit); accuracy from summed counts, which are exact in double.
  double loss_sum = 0, correct = 0, count = 0;
  bool classifier = true;
  const int B = cfg_.schedule.batch;
  model_.set_training(false);
  for (int i = 0; i < cfg_.schedule.val_batches; ++i) {
    const uint64_t first = (static_cast<uint64_t>(i) * static_cast<uint64_t>(ranks_.world) +
                            static_cast<uint64_t>(ranks_.rank)) *
                           static_cast<uint64_t>(B);
    val_data_(batch_, first, B);
    const EvalResult e = model_.evaluate(batch_);
    loss_sum += e.count > 0 ? e.loss_sum / e.count : 0.0;
    classifier = classifier && e.correct >= 0;
    correct += e.correct;
    count += e.count;
  }
  model_.set_training(true);
  Validation v;
  v.loss = ranks_.mean_across_ranks(loss_sum / cfg_.schedule.val_batches);
  // Every rank takes the same branch: the batch shapes and the model are the same on all of them.
  if (classifier) v.accuracy = ranks_.mean_across_ranks(correct) / ranks_.mean_across_ranks(count);
  return v;
}

void Trainer::print_progress(long step, double loss, double items_per_s, double eta_s, bool final_line) {
  if (!cfg_.progress || ranks_.rank != 0) return;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  // On a terminal the line redraws in place; in a log it is printed every 10th step.
  if (!tty && !final_line && step % 10 != 0 && step != 1) return;
  const char* unit = cfg_.schedule.seq > 0 ? "tok/s" : "samples/s";
  std::fprintf(stderr, "%sstep %6ld/%ld | loss %.4f | lr %.2e | %8.0f %s | ETA %4.0fs%s", tty ? "\r" : "",
               step, cfg_.schedule.steps, loss, static_cast<double>(lr_.at(step - 1)), items_per_s, unit,
               eta_s, (tty && !final_line) ? "" : "\n");
  std::fflush(stderr);
}

Trainer::Validation Trainer::validate_if_due(long step, bool last, TrainResult& res) {
  if (!((cfg_.schedule.val_every > 0 && (step + 1) % cfg_.schedule.val_every == 0) || last)) return {};
  // Its own phase: at the default 8 batches it is a tenth of a short run's timed steps.
  ScopedPhase t(&profiler_, Phase::Validation);
  const bool batches = val_data_ && cfg_.schedule.val_batches > 0;
  const WholeParams whole(batches ? reducer_ : nullptr);
  const Validation val = validate();
  if (val.loss >= 0) {
    res.val_loss = val.loss;
    res.val_accuracy = val.accuracy;
  }
  return val;
}

void Trainer::report_step(const StepLog& s, const Validation& val, const tee::UniqueFd& metrics) {
  const double ips = s.items_per_step / s.mean_s;
  const double eta = s.mean_s * static_cast<double>(cfg_.schedule.steps - s.step);
  print_progress(s.step, s.loss, ips, eta, s.last);
  if (val.loss >= 0 && ranks_.rank == 0 && cfg_.progress && (!s.last || val.accuracy >= 0)) {
    std::fprintf(stderr, "%sstep %6ld | val_loss %.4f", (::isatty(STDERR_FILENO) && !s.last) ? "\n" : "",
                 s.step, val.loss);
    if (val.accuracy >= 0) std::fprintf(stderr, " | val_accuracy %.2f%%", 100.0 * val.accuracy);
    std::fputc('\n', stderr);
  }
  if (!metrics) return;
  nlohmann::json m = {{"step", s.step},
                      {"loss", s.loss},
                      {"lr", lr_.at(s.step - 1)},
                      {"grad_norm", last_grad_norm_},
                      {"step_s", s.step_s},
                      {"items_per_s", s.items_per_step / s.step_s},
                      // This rank's resident set after the step: what --shard leaves it (docs/benchmarks.md).
                      {"rss_mib", static_cast<double>(resident_bytes()) / (1024.0 * 1024.0)}};
  if (val.loss >= 0) m["val_loss"] = val.loss;
  if (val.accuracy >= 0) m["val_accuracy"] = val.accuracy;
  tee::write_output(metrics.get(), m.dump() + "\n", cfg_.metrics_path, "--metrics");
}

TrainResult Trainer::run(long start_step, uint64_t samples_consumed) {
  const auto now = [this] { return profiler_.now(); };
  tee::UniqueFd metrics;  // JSON lines, rank 0 only: appended to on resume
  if (!cfg_.metrics_path.empty() && ranks_.rank == 0) {
    metrics = tee::open_output_file(cfg_.metrics_path, "--metrics",
                                    start_step > 0 ? tee::OutputMode::Append : tee::OutputMode::Truncate);
  }
  const int counted = ranks_.modelled_world > 0 ? ranks_.modelled_world : ranks_.world;
  const uint64_t global_batch = static_cast<uint64_t>(cfg_.schedule.batch) * static_cast<uint64_t>(counted) *
                                static_cast<uint64_t>(cfg_.schedule.grad_accum);
  const double items_per_step =
      static_cast<double>(global_batch) * (cfg_.schedule.seq > 0 ? cfg_.schedule.seq : 1);

  TrainResult res;
  // Start the clock together on every rank, so that one rank's set-up time is not counted as another
  // rank's exposed communication (phases then add up to the step time on every rank).
  if (ranks_.world > 1) ranks_.mean_across_ranks(0.0f);
  ranks_.sync_clocks();
  auto t0 = now();
  long timed_from = start_step;  // first step whose time counts
  double loss = 0;
  for (long step = start_step; step < cfg_.schedule.steps; ++step) {
    const auto ts = now();
    const float local_loss = train_step(step, samples_consumed);
    samples_consumed += global_batch;
    {
      // Averaging the loss is a blocking collective on this thread: exposed communication too.
      ScopedPhase t(&profiler_, Phase::CommExposed, Lane::Compute, "loss mean");
      loss = ranks_.mean_across_ranks(local_loss);
      ranks_.sync_clocks();
    }
    const double dt = std::chrono::duration<double>(now() - ts).count();
    const bool last = step + 1 == cfg_.schedule.steps;
    const Validation val = validate_if_due(step, last, res);
    {
      // Inside the timed steps too: the progress line, the metrics record and the replica check.
      ScopedPhase t(&profiler_, Phase::Bookkeeping);
      const double elapsed = std::chrono::duration<double>(now() - t0).count();
      const long done = step + 1 - timed_from;
      const StepLog log{step + 1, loss, dt, items_per_step, elapsed / static_cast<double>(done), last};
      report_step(log, val, metrics);
      if (cfg_.after_step) cfg_.after_step(step + 1);
    }
    if (cfg_.save_every > 0 && cfg_.save_checkpoint && ((step + 1) % cfg_.save_every == 0 || last)) {
      ScopedPhase t(&profiler_, Phase::Checkpoint);
      cfg_.save_checkpoint(step + 1, samples_consumed);
    }
    if (cfg_.schedule.timing_warmup > 0 && step + 1 - start_step == cfg_.schedule.timing_warmup && !last) {
      // End of the warm-up: every rank restarts its clock and phase times together.
      if (ranks_.world > 1) ranks_.mean_across_ranks(0.0f);
      ranks_.sync_clocks();
      profiler_.reset_times();
      t0 = now();
      timed_from = step + 1;
    }
  }
  res.seconds = std::chrono::duration<double>(now() - t0).count();
  res.steps = cfg_.schedule.steps;
  res.final_loss = loss;
  const long ran = cfg_.schedule.steps - timed_from;
  res.timed_steps = ran;
  res.virtual_time = profiler_.virtual_time();
  res.step_seconds_mean = ran > 0 ? res.seconds / static_cast<double>(ran) : 0;
  res.items_per_s = ran > 0 ? items_per_step * static_cast<double>(ran) / res.seconds : 0;
  if (reducer_ != nullptr) reducer_->gather_params();  // the run ends with whole parameters
  res.params_sha256 = cfg_.digest_params ? params_sha256(backend_, model_) : "none";
  return res;
}

}  // namespace tt
