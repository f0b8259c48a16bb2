#include "engine/optimizer.h"

#include <cmath>

#include "base/error.h"

namespace tt {
namespace {

// State arena: [m (N) | v (N)].
class AdamW final : public Optimizer {
 public:
  AdamW(Backend& backend, const OptimizerConfig& cfg, std::size_t n)
      : backend_(backend), cfg_(cfg), n_(n), state_(backend, 2 * n * sizeof(float)) {}

  void step(Model& model, float lr, float grad_scale, long step_index) override {
    float* m = state_.as<float>();
    float* v = m + n_;
    for (const ParamInfo& p : model.params()) {
      const AdamWConfig c{lr, cfg_.beta1, cfg_.beta2, cfg_.eps, p.decay ? cfg_.weight_decay : 0.0f};
      backend_.adamw_update(model.param_data() + p.offset, model.grad_data() + p.offset, m + p.offset,
                            v + p.offset, p.numel, c, grad_scale, step_index);
    }
  }
  float* state_data() override { return state_.as<float>(); }
  std::size_t state_floats() const override { return 2 * n_; }
  std::string name() const override { return "adamw"; }

 private:
  Backend& backend_;
  OptimizerConfig cfg_;
  std::size_t n_;
  DeviceBuffer state_;
};

// State arena: [momentum buffer (N)].
class Sgd final : public Optimizer {
 public:
  Sgd(Backend& backend, const OptimizerConfig& cfg, std::size_t n)
      : backend_(backend), cfg_(cfg), n_(n), state_(backend, n * sizeof(float)) {}

  void step(Model& model, float lr, float grad_scale, long /*step_index*/) override {
    for (const ParamInfo& p : model.params()) {
      const SgdConfig c{lr, cfg_.momentum, p.decay ? cfg_.weight_decay : 0.0f};
      backend_.sgd_update(model.param_data() + p.offset, model.grad_data() + p.offset,
                          state_.as<float>() + p.offset, p.numel, c, grad_scale);
    }
  }
  float* state_data() override { return state_.as<float>(); }
  std::size_t state_floats() const override { return n_; }
  std::string name() const override { return "sgd"; }

 private:
  Backend& backend_;
  OptimizerConfig cfg_;
  std::size_t n_;
  DeviceBuffer state_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(Backend& backend, const OptimizerConfig& cfg,
                                          std::size_t num_params) {
  if (cfg.kind == OptimizerKind::Sgd) return std::make_unique<Sgd>(backend, cfg, num_params);
  return std::make_unique<AdamW>(backend, cfg, num_params);
}

ClipResult clip_factor(Backend& backend, const float* grads, std::size_t n, float max_norm) {
  ClipResult r;
  r.norm = std::sqrt(backend.sum_squares(grads, n));
  if (max_norm > 0.0f && r.norm > static_cast<double>(max_norm)) {
    r.scale = static_cast<float>(static_cast<double>(max_norm) / (r.norm + 1e-6));
  }
  return r;
}

}  // namespace tt
