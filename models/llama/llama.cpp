// Llama: parameter table, initialisation, activation arenas and accounting. The passes themselves are in
// llama_forward.cpp and llama_backward.cpp.
#include "models/llama/llama.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/rng.h"
#include "models/common/model_layout.h"

namespace tt {

std::vector<ParamInfo> Llama::param_table(const LlamaConfig& cfg) {
  // Decay on every matrix (embeddings included), not on the RMSNorm gains. Order: Note [Stacked projections].
  ParamTableBuilder t;
  const int64_t C = cfg.n_embd;
  const int64_t HS = cfg.head_size();
  const int64_t QW = cfg.n_head * HS;
  const int64_t KW = cfg.n_kv_head * HS;
  const int64_t F = cfg.ffn_hidden;
  t.add("model.embed_tokens.weight", {cfg.vocab_size, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.add(p + "input_layernorm.weight", {C});
    t.add(p + "self_attn.q_proj.weight", {QW, C});
    t.add(p + "self_attn.k_proj.weight", {KW, C});
    t.add(p + "self_attn.v_proj.weight", {KW, C});
    t.add(p + "self_attn.o_proj.weight", {C, QW});
    t.add(p + "post_attention_layernorm.weight", {C});
    t.add(p + "mlp.gate_proj.weight", {F, C});
    t.add(p + "mlp.up_proj.weight", {F, C});
    t.add(p + "mlp.down_proj.weight", {C, F});
  }
  t.add("model.norm.weight", {C});
  if (!cfg.tied) t.add("lm_head.weight", {cfg.vocab_size, C});
  return t.take();
}

namespace {

LlamaConfig validated(LlamaConfig cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

Llama::Llama(Backend& backend, LlamaConfig cfg, std::string name)
    : TokenModel(backend, "llama",
                 name.empty() ? "llama(" + validated(cfg).describe() + ")" : std::move(name),
                 param_table(validated(cfg)), cfg.num_params()),
      cfg_(cfg) {
  layer_offset0_ = param("model.embed_tokens.weight").numel;
  norm_offset_ = param("model.norm.weight").offset;
  head_offset_ = cfg_.tied ? 0 : param("lm_head.weight").offset;
  layer_stride_ = (norm_offset_ - layer_offset0_) / static_cast<std::size_t>(cfg_.n_layer);
}

Llama::LayerParams Llama::layer_params(float* base, int l) const {
  const std::size_t C = static_cast<std::size_t>(cfg_.n_embd);
  const std::size_t F = static_cast<std::size_t>(cfg_.ffn_hidden);
  const std::size_t QW = static_cast<std::size_t>(cfg_.n_head) * static_cast<std::size_t>(cfg_.head_size());
  float* p = base + layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_;
  auto take = [&p](std::size_t n) {
    float* r = p;
    p += n;
    return r;
  };
  // The parameter table's order (Note [Stacked projections]).
  LayerParams lp{};
  lp.ln1w = take(C);
  lp.qkvw = take(static_cast<std::size_t>(cfg_.qkv_width()) * C);
  lp.ow = take(C * QW);
  lp.ln2w = take(C);
  lp.guw = take(2 * F * C);
  lp.downw = take(C * F);
  return lp;
}

void Llama::init_params(uint64_t seed) {
  // N(0, 0.02) for every matrix (HF's initializer_range), N(0, 0.02 / sqrt(2 * n_layer)) for the two that
  // write into the residual stream (o_proj, down_proj: as GPT-2), unit RMSNorm gains. One RNG stream per
  // tensor, derived from the seed and the tensor's index.
  std::vector<float> host(num_params_, 0.0f);
  const double proj_std = 0.02 / std::sqrt(2.0 * cfg_.n_layer);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& p = params_[i];
    float* dst = host.data() + p.offset;
    if (p.shape.size() == 1) {
      std::fill(dst, dst + p.numel, 1.0f);
      continue;
    }
    const bool proj = name_ends_with(p.name, "o_proj.weight") || name_ends_with(p.name, "down_proj.weight");
    const double stddev = proj ? proj_std : 0.02;
    Rng rng(derive_seed(seed, i));
    for (std::size_t j = 0; j < p.numel; ++j) dst[j] = static_cast<float>(rng.normal() * stddev);
  }
  backend_.copy_to_device(params_buf_.data(), host.data(), num_params_ * sizeof(float));
  have_forward_ = false;
}

Llama::Views Llama::carve(const LlamaConfig& cfg, float* acts, float* dacts, int B, int T) {
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const std::size_t C = static_cast<std::size_t>(cfg.n_embd);
  const std::size_t F = static_cast<std::size_t>(cfg.ffn_hidden);
  const std::size_t QKV = static_cast<std::size_t>(cfg.qkv_width());
  const std::size_t QW = static_cast<std::size_t>(cfg.n_head) * static_cast<std::size_t>(cfg.head_size());
  const std::size_t V = static_cast<std::size_t>(cfg.vocab_size);
  const std::size_t att = static_cast<std::size_t>(B) * static_cast<std::size_t>(cfg.n_head) *
                          static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  Views v;
  ArenaCarver<float> a(acts);
  v.encoded = a.take(N * C);
  v.scratch = a.take(N * C);
  v.layers.assign(static_cast<std::size_t>(cfg.n_layer), LayerActs{});
  for (LayerActs& la : v.layers) {
    la.ln1 = a.take(N * C);
    la.ln1_rstd = a.take(N);
    la.qkv = a.take(N * QKV);
    la.atty = a.take(N * QW);
    la.att = a.take(att);
    la.res2 = a.take(N * C);
    la.ln2 = a.take(N * C);
    la.ln2_rstd = a.take(N);
    la.gu = a.take(2 * N * F);
    la.h = a.take(N * F);
    la.res3 = a.take(N * C);
  }
  v.lnf = a.take(N * C);
  v.lnf_rstd = a.take(N);
  v.logits = a.take(N * V);
  v.probs = a.take(N * V);
  v.losses = a.take(N);
  v.acts_floats = a.used();
  static_cast<TransformerGrads&>(v) = TransformerGrads::carve(dacts, N, C, att, std::max(2 * F, QKV));
  return v;
}

std::pair<std::size_t, std::size_t> Llama::arena_floats(int B, int T) const {
  const Views v = carve(cfg_, nullptr, nullptr, B, T);
  return {v.acts_floats, v.dacts_floats};
}

void Llama::carve_views() {
  v_ = carve(cfg_, acts_buf_.as<float>(), dacts_buf_.as<float>(), res_B_, res_T_);
}

StepFlops Llama::flops_for(const LlamaConfig& cfg, int B, int T) {
  // 2 per multiply-add: the block's matmuls (qkv, o_proj, gate and up, down_proj), attention's Q K^T and
  // att V over the full T x T (as transformer_block_flops counts them) and the lm head; element-wise ops
  // are ignored. Backward is 2x forward (input and weight gradients).
  const double N = static_cast<double>(B) * T;
  const double C = cfg.n_embd;
  const double QW = static_cast<double>(cfg.n_head) * cfg.head_size();
  const double block = 2.0 * N * (C * cfg.qkv_width() + QW * C + 3.0 * C * cfg.ffn_hidden) + 4.0 * N * T * QW;
  StepFlops f;
  f.forward = cfg.n_layer * block + 2.0 * N * C * cfg.vocab_size;
  f.backward = 2.0 * f.forward;
  return f;
}

std::size_t Llama::activation_bytes_for(const LlamaConfig& cfg, int B, int T) {
  const Views sz = carve(cfg, nullptr, nullptr, B, T);
  return token_arena_bytes(sz.acts_floats, sz.dacts_floats, B, T);
}

}  // namespace tt
