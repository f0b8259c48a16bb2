// Gpt2: parameter table, initialisation, activation arenas and accounting. The passes themselves are
// in gpt2_forward.cpp and gpt2_backward.cpp.
#include "models/gpt2/gpt2.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"
#include "core/rng.h"
#include "models/common/model_layout.h"

namespace tt {

std::vector<ParamInfo> Gpt2::param_table(const Gpt2Config& cfg) {
  // Decay on every matrix, wte and wpe included (as nanoGPT); not on biases or LayerNorm.
  ParamTableBuilder t;
  const int64_t C = cfg.n_embd;
  auto add = [&t](std::string pname, std::vector<int64_t> shape) {
    t.add(std::move(pname), std::move(shape));
  };
  add("wte", {cfg.padded_vocab(), C});
  add("wpe", {cfg.context, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    add(h + "ln_1.weight", {C});
    add(h + "ln_1.bias", {C});
    add(h + "attn.c_attn.weight", {3 * C, C});
    add(h + "attn.c_attn.bias", {3 * C});
    add(h + "attn.c_proj.weight", {C, C});
    add(h + "attn.c_proj.bias", {C});
    add(h + "ln_2.weight", {C});
    add(h + "ln_2.bias", {C});
    add(h + "mlp.c_fc.weight", {4 * C, C});
    add(h + "mlp.c_fc.bias", {4 * C});
    add(h + "mlp.c_proj.weight", {C, 4 * C});
    add(h + "mlp.c_proj.bias", {C});
  }
  add("ln_f.weight", {C});
  add("ln_f.bias", {C});
  return t.take();
}

namespace {

Gpt2Config validated(Gpt2Config cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

Gpt2::Gpt2(Backend& backend, Gpt2Config cfg, std::string name)
    : TokenModel(backend, "gpt2", name.empty() ? "gpt2(" + validated(cfg).describe() + ")" : std::move(name),
                 param_table(validated(cfg)), cfg.num_params()),
      cfg_(cfg) {
  layer_offset0_ = param("wpe").offset + param("wpe").numel;
  lnf_offset_ = param("ln_f.weight").offset;
  layer_stride_ = (lnf_offset_ - layer_offset0_) / static_cast<std::size_t>(cfg_.n_layer);
}

Gpt2::LayerParams Gpt2::layer_params(float* base, int l) const {
  const std::size_t C = static_cast<std::size_t>(cfg_.n_embd);
  float* p = base + layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_;
  LayerParams lp{};
  auto take = [&p](std::size_t n) {
    float* r = p;
    p += n;
    return r;
  };
  // Same order as the parameter table built in the constructor.
  lp.ln1w = take(C);
  lp.ln1b = take(C);
  lp.qkvw = take(3 * C * C);
  lp.qkvb = take(3 * C);
  lp.attprojw = take(C * C);
  lp.attprojb = take(C);
  lp.ln2w = take(C);
  lp.ln2b = take(C);
  lp.fcw = take(4 * C * C);
  lp.fcb = take(4 * C);
  lp.fcprojw = take(4 * C * C);
  lp.fcprojb = take(C);
  return lp;
}

void Gpt2::init_params(uint64_t seed) {
  // GPT-2 / nanoGPT init: N(0, 0.02) for matrices, N(0, 0.02 / sqrt(2 * n_layer)) for the projections
  // that write into the residual stream, zero biases, unit LayerNorm gains. One RNG stream per tensor,
  // derived from the seed and the tensor's index, so a shape change in one tensor leaves the others.
  std::vector<float> host(num_params_, 0.0f);
  const double proj_std = 0.02 / std::sqrt(2.0 * cfg_.n_layer);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& p = params_[i];
    float* dst = host.data() + p.offset;
    if (p.shape.size() == 1) {
      const bool gain = name_ends_with(p.name, "ln_1.weight") || name_ends_with(p.name, "ln_2.weight") ||
                        name_ends_with(p.name, "ln_f.weight");
      std::fill(dst, dst + p.numel, gain ? 1.0f : 0.0f);
      continue;
    }
    const double stddev = name_ends_with(p.name, "c_proj.weight") ? proj_std : 0.02;
    // Padded vocabulary rows of wte stay zero.
    const std::size_t n =
        p.name == "wte" ? static_cast<std::size_t>(cfg_.vocab_size) * static_cast<std::size_t>(cfg_.n_embd)
                        : p.numel;
    Rng rng(derive_seed(seed, i));
    for (std::size_t j = 0; j < n; ++j) dst[j] = static_cast<float>(rng.normal() * stddev);
  }
  backend_.copy_to_device(params_buf_.data(), host.data(), num_params_ * sizeof(float));
  have_forward_ = false;
}

Gpt2::Views Gpt2::carve(const Gpt2Config& cfg, float* acts, float* dacts, int B, int T) {
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const std::size_t C = static_cast<std::size_t>(cfg.n_embd);
  const std::size_t Vp = static_cast<std::size_t>(cfg.padded_vocab());
  const std::size_t att = static_cast<std::size_t>(B) * static_cast<std::size_t>(cfg.n_head) *
                          static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  Views v;
  ArenaCarver<float> a(acts);
  v.encoded = a.take(N * C);
  v.scratch = a.take(N * C);
  v.layers.assign(static_cast<std::size_t>(cfg.n_layer), LayerActs{});
  for (LayerActs& la : v.layers) {
    la.ln1 = a.take(N * C);
    la.ln1_mean = a.take(N);
    la.ln1_rstd = a.take(N);
    la.qkv = a.take(3 * N * C);
    la.atty = a.take(N * C);
    la.att = a.take(att);
    la.res2 = a.take(N * C);
    la.ln2 = a.take(N * C);
    la.ln2_mean = a.take(N);
    la.ln2_rstd = a.take(N);
    la.fch = a.take(4 * N * C);
    la.fch_gelu = a.take(4 * N * C);
    la.res3 = a.take(N * C);
  }
  v.lnf = a.take(N * C);
  v.lnf_mean = a.take(N);
  v.lnf_rstd = a.take(N);
  v.logits = a.take(N * Vp);
  v.probs = a.take(N * Vp);
  v.losses = a.take(N);
  v.acts_floats = a.used();
  static_cast<TransformerGrads&>(v) = TransformerGrads::carve(dacts, N, C, att);
  return v;
}

std::pair<std::size_t, std::size_t> Gpt2::arena_floats(int B, int T) const {
  const Views v = carve(cfg_, nullptr, nullptr, B, T);
  return {v.acts_floats, v.dacts_floats};
}

void Gpt2::carve_views() {
  v_ = carve(cfg_, acts_buf_.as<float>(), dacts_buf_.as<float>(), res_B_, res_T_);
}

StepFlops Gpt2::flops_for(const Gpt2Config& cfg, int B, int T) {
  // The blocks (transformer_block_flops) and the tied lm head; element-wise ops are ignored. Backward
  // does two matmuls per forward matmul (input and weight gradients): 2x forward.
  const double N = static_cast<double>(B) * T;
  const double head = 2.0 * N * cfg.n_embd * cfg.padded_vocab();
  StepFlops f;
  f.forward = cfg.n_layer * transformer_block_flops(B, T, cfg.n_embd) + head;
  f.backward = 2.0 * f.forward;
  return f;
}

std::size_t Gpt2::activation_bytes_for(const Gpt2Config& cfg, int B, int T) {
  const Views sz = carve(cfg, nullptr, nullptr, B, T);
  return token_arena_bytes(sz.acts_floats, sz.dacts_floats, B, T);
}

}  // namespace tt
