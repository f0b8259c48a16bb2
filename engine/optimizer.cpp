#include "engine/optimizer.h"

#include <algorithm>

namespace tt {
namespace {

std::size_t floats_in(const std::vector<ParamRange>& ranges) {
  std::size_t n = 0;
  for (const ParamRange& r : ranges) n += r.count;
  return n;
}

// Calls fn(p, offset, count, state_offset) for every piece of a parameter inside the ranges: the ranges
// in order, their state packed one after the other, each split where parameters (and their weight
// decay) change.
template <typename Fn>
void for_each_piece(const std::vector<ParamInfo>& params, const std::vector<ParamRange>& ranges, Fn&& fn) {
  std::size_t state = 0;
  for (const ParamRange& r : ranges) {
    for (const ParamInfo& p : params) {
      const std::size_t begin = std::max(r.offset, p.offset);
      const std::size_t end = std::min(r.offset + r.count, p.offset + p.numel);
      if (begin < end) fn(p, begin, end - begin, state + (begin - r.offset));
    }
    state += r.count;
  }
}

// State arena: [m (S) | v (S)], S the floats of the ranges (every parameter: N, at their offsets).
class AdamW final : public Optimizer {
 public:
  AdamW(Backend& backend, const OptimizerConfig& cfg, std::vector<ParamRange> ranges)
      : backend_(backend),
        cfg_(cfg),
        ranges_(std::move(ranges)),
        n_(floats_in(ranges_)),
        state_(backend, 2 * n_ * sizeof(float)) {}

  void step(Model& model, float lr, float grad_scale, long step_index) override {
    float* m = state_.as<float>();
    float* v = m + n_;
    for_each_piece(
        model.params(), ranges_, [&](const ParamInfo& p, std::size_t at, std::size_t count, std::size_t s) {
          const AdamWConfig c{lr, cfg_.beta1, cfg_.beta2, cfg_.eps, p.decay ? cfg_.weight_decay : 0.0f};
          backend_.adamw_update(model.param_data() + at, model.grad_data() + at, m + s, v + s, count, c,
                                grad_scale, step_index);
        });
  }
  float* state_data() override { return state_.as<float>(); }
  std::size_t state_floats() const override { return 2 * n_; }
  std::string name() const override { return "adamw"; }

 private:
  Backend& backend_;
  OptimizerConfig cfg_;
  std::vector<ParamRange> ranges_;
  std::size_t n_;
  DeviceBuffer state_;
};

// State arena: [momentum buffer (S)].
class Sgd final : public Optimizer {
 public:
  Sgd(Backend& backend, const OptimizerConfig& cfg, std::vector<ParamRange> ranges)
      : backend_(backend),
        cfg_(cfg),
        ranges_(std::move(ranges)),
        n_(floats_in(ranges_)),
        state_(backend, n_ * sizeof(float)) {}

  void step(Model& model, float lr, float grad_scale, long /*step_index*/) override {
    for_each_piece(model.params(), ranges_,
                   [&](const ParamInfo& p, std::size_t at, std::size_t count, std::size_t s) {
                     const SgdConfig c{lr, cfg_.momentum, p.decay ? cfg_.weight_decay : 0.0f};
                     backend_.sgd_update(model.param_data() + at, model.grad_data() + at,
                                         state_.as<float>() + s, count, c, grad_scale);
                   });
  }
  float* state_data() override { return state_.as<float>(); }
  std::size_t state_floats() const override { return n_; }
  std::string name() const override { return "sgd"; }

 private:
  Backend& backend_;
  OptimizerConfig cfg_;
  std::vector<ParamRange> ranges_;
  std::size_t n_;
  DeviceBuffer state_;
};

}  // namespace

std::size_t optimizer_pieces(const std::vector<ParamInfo>& params, const std::vector<ParamRange>& ranges) {
  std::size_t n = 0;
  for_each_piece(params, ranges, [&n](const ParamInfo&, std::size_t, std::size_t, std::size_t) { ++n; });
  return n;
}

std::unique_ptr<Optimizer> make_optimizer(Backend& backend, const OptimizerConfig& cfg,
                                          std::size_t num_params,
                                          std::optional<std::vector<ParamRange>> shard) {
  std::vector<ParamRange> ranges =
      shard ? std::move(*shard) : std::vector<ParamRange>{{.offset = 0, .count = num_params}};
  if (cfg.kind == OptimizerKind::Sgd) return std::make_unique<Sgd>(backend, cfg, std::move(ranges));
  return std::make_unique<AdamW>(backend, cfg, std::move(ranges));
}

}  // namespace tt
