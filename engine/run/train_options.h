// Everything a training run is asked to do, typed and grouped by the part of the run that reads it:
// `teetrain train`'s flags parse into TrainOptions (tools/cli/train_flags.cpp), engine/run/run_plan.h
// resolves and validates it once, and each stage of the run takes its part. Its JSON form
// (train_options_json) is what every rank attests and agrees on and what a checkpoint records.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "comm/adversary/adversary_spec.h"
#include "engine/keys/tee_session.h"
#include "engine/run_choices.h"
#include "engine/trainer.h"
#include "models/model_registry.h"

namespace tt {

// The TEE choices of `train` and `bench allreduce`: the typed settings the engine resolves
// (engine/run_choices.h), plus who is trusted, where the key file is, and the teaching adversary.
struct TeeOptions {
  TeeSettings settings;  // --tee, --cipher, --rekey-mb and fast's switches
  TrustOptions trust;    // --attestation, --trust-root, --device-identity, --policy
  std::string key_file = "data-cache/teetrain.key";  // master key for sealed data and checkpoints
  bool allow_plain_data = false;
  std::optional<comm::AdversarySpec> adversary;  // --adversary: an attacker on the links (teaching)
};

// The resolved mode and switches (summary, configuration agreement).
nlohmann::json tee_json(const TeeOptions& o, bool gpu_gradients = false);

// What the run reads: token shards or an image set, how fast sealed batches may enter, and the data
// owner's pin (engine/run/input_agreement.h).
struct DataOptions {
  std::string path = "data-cache/fortunes";
  double ingress_gbps = 0;     // cap on batch ingress (e.g. 3 to emulate H100 CC's bounce buffers)
  std::string expect_dataset;  // SHA-256 (hex) of the dataset manifest (`seal-data` prints it)
};

// Checkpoints: when to save, where, how many to keep, what to resume from and its pin.
struct CheckpointOptions {
  long save_every = 0;
  std::string dir = "runs/ckpt";
  int keep = 3;
  std::string resume;
  std::string expect;  // SHA-256 (hex) of the manifest of the checkpoint resumed from (`ckpt inspect`)
  std::optional<CkptLayout> layout;  // what saves write; nullopt: sharded under --shard, else whole

  bool any() const { return save_every > 0 || !resume.empty(); }  // the run writes or reads checkpoints
};

// What rank 0 writes and prints besides the run itself.
struct OutputOptions {
  std::string metrics;  // JSON lines, one per step
  std::string summary;  // the end-of-run summary, JSON
  std::string trace;    // Chrome/Perfetto trace
  bool no_progress = false;
  bool quiet = false;  // --quiet: no banner, progress, notes or phase table; the result line and errors
};

struct TrainOptions {
  ModelOptions model;
  DataOptions data;
  ScheduleOptions schedule;  // the trainer's (engine/trainer.h)
  ParallelOptions parallel;  // the gradient path's (engine/gradients/gradient_paths.h)
  ComputeOptions compute;    // the platform's (platform/platform.h)
  CheckpointOptions checkpoints;
  OutputOptions output;
  TeeOptions tee;
};

// The options that must agree across ranks (everything but per-rank paths), as JSON.
nlohmann::json train_options_json(const TrainOptions& o);

}  // namespace tt
