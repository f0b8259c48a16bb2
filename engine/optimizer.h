// Optimizers over the flat parameter buffer. State lives in one arena (m and v for AdamW,
// the momentum buffer for SGD) so it can be checkpointed and sealed as one blob.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/model.h"

namespace tt {

enum class OptimizerKind { AdamW, Sgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;  // applied to parameters whose ParamInfo::decay is set
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update with learning rate lr. grad_scale multiplies gradients first (clipping).
  // step_index is 1-based (AdamW bias correction).
  virtual void step(Model& model, float lr, float grad_scale, long step_index) = 0;
  // The state arena (device), for checkpoints: floats, layout documented by the implementation.
  virtual float* state_data() = 0;
  virtual std::size_t state_floats() const = 0;
  virtual std::string name() const = 0;
};

// A range of the flat parameter buffer, in floats.
struct ParamRange {
  std::size_t offset = 0;
  std::size_t count = 0;
};

// `shard`: the ranges this rank updates, in the order their state is laid out (a sharded run's,
// Note [Shard layout] in engine/gradients/shard.h); none: every parameter. The state arena holds the
// shard's floats only, so ZeRO's saving is real: each element is updated exactly as without a shard.
std::unique_ptr<Optimizer> make_optimizer(Backend& backend, const OptimizerConfig& cfg,
                                          std::size_t num_params,
                                          std::optional<std::vector<ParamRange>> shard = std::nullopt);

// The optimizer's update kernels for `ranges`: one per piece of a parameter inside a range (a step
// launches that many, each priced by its floats and, on an emulated GPU in CC mode, its launch).
std::size_t optimizer_pieces(const std::vector<ParamInfo>& params, const std::vector<ParamRange>& ranges);

}  // namespace tt
