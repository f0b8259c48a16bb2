// Everything a training run is asked to do, typed, in one struct: `teetrain train`'s flags parse into
// it (tools/cli/train_flags.cpp), and the engine builds the run from it (engine/training_run.h).
// Its JSON form (train_options_json) is what every rank attests and agrees on and what a checkpoint
// records.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "comm/adversary_spec.h"
#include "engine/run_plan.h"
#include "engine/tee_session.h"
#include "engine/trainer.h"
#include "models/model_registry.h"

namespace tt {

struct ImageSource;  // engine/image_source.h

// The TEE choices of `train` and `bench allreduce`: the typed settings the engine resolves
// (engine/run_plan.h), plus who is trusted, where the key file is, and the teaching adversary.
struct TeeOptions {
  TeeSettings settings;  // --tee, --cipher, --rekey-mb and fast's switches
  TrustOptions trust;    // --attestation, --trust-root, --device-identity, --policy
  std::string key_file = "data-cache/teetrain.key";  // master key for sealed data and checkpoints
  bool allow_plain_data = false;
  std::optional<comm::AdversarySpec> adversary;  // --adversary: an attacker on the links (teaching)
};

// The resolved mode and switches (summary, configuration agreement).
nlohmann::json tee_json(const TeeOptions& o, bool gpu_gradients = false);

struct TrainOptions {
  ModelOptions model;
  std::string data = "data-cache/fortunes";
  long steps = 200;
  long epochs = 0;  // > 0: steps = epochs x ceil(training images / global batch) (steps_for_epochs)
  int batch = 8;
  int seq = 128;
  int grad_accum = 1;
  float lr = 1e-3f;
  float min_lr_frac = 0.1f;
  long warmup = 20;
  ScheduleKind schedule = ScheduleKind::Cosine;
  float grad_clip = 1.0f;
  float weight_decay = 0.1f;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  float momentum = 0.9f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  uint64_t seed = 1337;
  int threads = 0;
  DeviceKind device = DeviceKind::Cpu;  // cuda: one GPU per rank, rank % visible GPUs
  bool tf32 = false;                    // CUDA: TF32 tensor-core matmuls instead of exact FP32
  long val_every = 0;
  int val_batches = 8;
  std::string metrics;
  std::string summary;
  long save_every = 0;
  long timing_warmup = 0;  // first steps left out of step and phase times
  std::string ckpt_dir = "runs/ckpt";
  int keep = 3;
  std::string resume;
  // The data owner's pins (engine/input_agreement.h): SHA-256 (hex) of the dataset manifest
  // (`seal-data` prints it) and of the manifest of the checkpoint resumed from (`ckpt inspect`).
  std::string expect_dataset, expect_checkpoint;
  bool no_progress = false;
  bool quiet = false;  // --quiet: no banner, progress, notes or phase table; the result line and errors
  // Data parallelism.
  AllreduceAlgo allreduce = AllreduceAlgo::Ring;
  comm::AlgoRequest allreduce_algo = comm::AlgoRequest::Ring;  // --allreduce-algo
  std::string allreduce_cost;                                  // --allreduce-cost FILE
  double bucket_mb = 25;
  bool overlap = true;  // bucket all-reduces run while backward does
  int segment_kb = 1024;
  long check_replicas = 0;
  double timeout_s = 30;
  comm::WaitMode comm_wait = comm::WaitMode::Adaptive;  // how the ring's thread waits for messages
  double ingress_gbps = 0;  // cap on batch ingress (e.g. 3 to emulate H100 CC's bounce buffers)
  // Emulated GPU compute and links (overhead studies of paper-scale models on a small machine).
  ComputeMode compute = ComputeMode::Real;
  std::string gpu = "h100";
  GpuPrecision gpu_precision = GpuPrecision::Tf32;
  double gpu_tflops = 0;
  double gpu_efficiency = 0;
  double gpu_act_traffic = -1;  // emulated activation traffic (< 0 = table)
  double gpu_aead_gbps = 0;     // emulated GPU AES-GCM rate (0 = table)
  double link_gbps = 0;
  LinkModel link = LinkModel::Real;  // Emulate: plaintext ring payloads of an emulated GPU are not moved
  double cc_transfer_us = 0;  // fixed cost of one H100 CC bounce-buffer crossing of a CPU-sealed message
  TimeModel time = TimeModel::Auto;  // emulated runs: virtual (computed) or wall-clock time
  HostModel host;                    // the modelled host (virtual time)
  std::string trace;
  TeeOptions tee;
};

// The typed plan the engine validates and assembles the run from (engine/run_plan.h).
RunPlan run_plan(const TrainOptions& o);
inline bool gpu_gradients(const TrainOptions& o) {
  return o.compute == ComputeMode::Emulated || o.device == DeviceKind::Cuda;
}
// The options that must agree across ranks (everything but per-rank paths), as JSON.
nlohmann::json train_options_json(const TrainOptions& o);

// The optimizer steps the run takes: --steps, or with --epochs N, N passes over the training images
// at the global batch (batch x ranks x grad-accum), the last batch of an epoch rounding up: 5 epochs
// of Fashion-MNIST (60,000 images) at a global batch of 128 are 5 x 469 = 2,345 steps. `images` is
// the run's image data (null for token data, which --epochs refuses). Throws InputError when --epochs
// leaves no step for --timing-warmup.
long steps_for_epochs(const TrainOptions& o, const ImageSource* images, int world);

// The trainer's settings from the options; have_val: the data has a validation split.
TrainConfig trainer_config(const TrainOptions& o, bool have_val);

}  // namespace tt
