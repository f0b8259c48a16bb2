// The plan of a training run: its options (engine/run/train_options.h) resolved once against what the data
// and the world decide — an image set's shape and classes, no sequence for an image model, --epochs as
// steps — and validated, every conflicting choice named in one message. A RunPlan is only ever built
// whole and never changed: each stage of the run reads the part it needs (the platform its
// ComputeOptions, the gradient path its ParallelOptions, the trainer its ScheduleOptions), and what the
// ranks agree on is the JSON of exactly these options.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/run/train_options.h"
#include "platform/platform.h"

namespace tt {

struct ImageSource;  // engine/input/image_source.h

class RunPlan {
 public:
  // `images`: the run's image set, opened from the same options (null for token data); `world`: the
  // number of ranks. Throws InputError (exit 2): --epochs with token data or leaving no step to time,
  // or every conflicting choice at once (validate).
  RunPlan(const TrainOptions& options, const ImageSource* images, int world);

  const TrainOptions& options() const { return o_; }
  const ModelOptions& model() const { return o_.model; }
  const DataOptions& data() const { return o_.data; }
  const ScheduleOptions& schedule() const { return o_.schedule; }
  const ParallelOptions& parallel() const { return o_.parallel; }
  const ComputeOptions& compute() const { return o_.compute; }
  const CheckpointOptions& checkpoints() const { return o_.checkpoints; }
  const OutputOptions& output() const { return o_.output; }
  const TeeOptions& tee() const { return o_.tee; }
  // The TEE mode's switches, resolved against where the gradients live.
  const TeeSwitches& switches() const { return ts_; }
  // train_options_json of the resolved options: what every rank attests and agrees on, and what a
  // checkpoint records.
  const nlohmann::json& json() const { return json_; }
  bool images() const { return images_; }
  int world() const { return world_; }
  // Several ranks sum their gradients (one rank reduces nothing: no reducer, no host transport).
  bool reduced() const { return world_ > 1; }

 private:
  TrainOptions o_;
  TeeSwitches ts_;
  nlohmann::json json_;
  bool images_ = false;
  int world_ = 1;
};

// The optimizer steps the run takes: --steps, or with --epochs N, N passes over the training images
// at the global batch (batch x ranks x grad-accum), the last batch of an epoch rounding up: 5 epochs
// of Fashion-MNIST (60,000 images) at a global batch of 128 are 5 x 469 = 2,345 steps. `images` is
// the run's image data (null for token data, which --epochs refuses). Throws InputError when --epochs
// leaves no step for --timing-warmup.
long steps_for_epochs(const ScheduleOptions& s, const ImageSource* images, int world);

// What the platform of `c` is built from (platform/platform.h): the backend's threads, the rank (which
// GPU), TF32, and an emulated GPU from the --gpu flags, whose ops advance `clock`.
// tee: the run is sealed (its emulated GPU then runs in CC mode where --cc-hardware asks for it).
platform::Options platform_options(const ComputeOptions& c, bool tee, int threads, int rank, RunClock& clock);

// Each conflicting choice, as one sentence saying what to do; empty when the options are consistent.
std::vector<std::string> plan_conflicts(const TrainOptions& o);
// Throws one InputError naming every conflict (exit 2), or returns. world > 0: the ranks run, whose
// count a folded ring's conflicts also check (Note [Folded ring]); 0: before the world is known.
void validate(const TrainOptions& o, int world = 0);

}  // namespace tt
