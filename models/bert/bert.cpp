// Bert: parameter table, initialisation, activation arenas and accounting. The passes are in
// bert_forward.cpp and bert_backward.cpp.
#include "models/bert/bert.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "core/rng.h"
#include "models/common/model_layout.h"

namespace tt {

std::vector<ParamInfo> Bert::param_table(const BertConfig& cfg) {
  // Decay on matrices (embeddings included), not on biases or LayerNorm: HF's no_decay rule.
  ParamTableBuilder t;
  const int64_t C = cfg.n_embd;
  auto add = [&t](std::string pname, std::vector<int64_t> shape) {
    t.add(std::move(pname), std::move(shape));
  };
  add("embeddings.word_embeddings.weight", {cfg.vocab_size, C});
  add("embeddings.position_embeddings.weight", {cfg.context, C});
  add("embeddings.token_type_embeddings.weight", {BertConfig::kTypeVocab, C});
  add("embeddings.LayerNorm.weight", {C});
  add("embeddings.LayerNorm.bias", {C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "encoder.layer." + std::to_string(l) + ".";
    add(h + "attention.self.qkv.weight", {3 * C, C});
    add(h + "attention.self.qkv.bias", {3 * C});
    add(h + "attention.output.dense.weight", {C, C});
    add(h + "attention.output.dense.bias", {C});
    add(h + "attention.output.LayerNorm.weight", {C});
    add(h + "attention.output.LayerNorm.bias", {C});
    add(h + "intermediate.dense.weight", {4 * C, C});
    add(h + "intermediate.dense.bias", {4 * C});
    add(h + "output.dense.weight", {C, 4 * C});
    add(h + "output.dense.bias", {C});
    add(h + "output.LayerNorm.weight", {C});
    add(h + "output.LayerNorm.bias", {C});
  }
  add("cls.predictions.transform.dense.weight", {C, C});
  add("cls.predictions.transform.dense.bias", {C});
  add("cls.predictions.transform.LayerNorm.weight", {C});
  add("cls.predictions.transform.LayerNorm.bias", {C});
  add("cls.predictions.bias", {cfg.vocab_size});
  return t.take();
}

namespace {

BertConfig validated(BertConfig cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

Bert::Bert(Backend& backend, BertConfig cfg, std::string name)
    : TokenModel(backend, "bert", name.empty() ? "bert(" + validated(cfg).describe() + ")" : std::move(name),
                 param_table(validated(cfg)), cfg.num_params()),
      cfg_(cfg) {
  emb_ln_offset_ = param("embeddings.LayerNorm.weight").offset;
  layer_offset0_ = emb_ln_offset_ + 2 * static_cast<std::size_t>(cfg_.n_embd);
  head_offset_ = param("cls.predictions.transform.dense.weight").offset;
  layer_stride_ = (head_offset_ - layer_offset0_) / static_cast<std::size_t>(cfg_.n_layer);
}

Bert::LayerParams Bert::layer_params(float* base, int l) const {
  const std::size_t C = static_cast<std::size_t>(cfg_.n_embd);
  float* p = base + layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_;
  auto take = [&p](std::size_t n) {
    float* r = p;
    p += n;
    return r;
  };
  // Same order as param_table.
  LayerParams lp{};
  lp.qkvw = take(3 * C * C);
  lp.qkvb = take(3 * C);
  lp.projw = take(C * C);
  lp.projb = take(C);
  lp.ln1w = take(C);
  lp.ln1b = take(C);
  lp.fcw = take(4 * C * C);
  lp.fcb = take(4 * C);
  lp.fcprojw = take(4 * C * C);
  lp.fcprojb = take(C);
  lp.ln2w = take(C);
  lp.ln2b = take(C);
  return lp;
}

Bert::HeadParams Bert::head_params(float* base) const {
  const std::size_t C = static_cast<std::size_t>(cfg_.n_embd);
  float* p = base + head_offset_;
  return {p, p + C * C, p + C * C + C, p + C * C + 2 * C, p + C * C + 3 * C};
}

void Bert::init_params(uint64_t seed) {
  // BERT's init: N(0, 0.02) for every matrix (embeddings included), zero biases, unit LayerNorm gains.
  // One RNG stream per tensor, as GPT-2.
  std::vector<float> host(num_params_, 0.0f);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& p = params_[i];
    float* dst = host.data() + p.offset;
    if (p.shape.size() == 1) {
      std::fill(dst, dst + p.numel, name_ends_with(p.name, "LayerNorm.weight") ? 1.0f : 0.0f);
      continue;
    }
    Rng rng(derive_seed(seed, i));
    for (std::size_t j = 0; j < p.numel; ++j) dst[j] = static_cast<float>(rng.normal() * 0.02);
  }
  backend_.copy_to_device(params_buf_.data(), host.data(), num_params_ * sizeof(float));
  have_forward_ = false;
}

Bert::Views Bert::carve(const BertConfig& cfg, float* acts, float* dacts, int B, int T) {
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const std::size_t C = static_cast<std::size_t>(cfg.n_embd);
  const std::size_t V = static_cast<std::size_t>(cfg.vocab_size);
  const std::size_t att = N * static_cast<std::size_t>(cfg.n_head) * static_cast<std::size_t>(T);
  Views v;
  ArenaCarver<float> a(acts);
  v.emb_sum = a.take(N * C);
  v.emb = a.take(N * C);
  v.emb_mean = a.take(N);
  v.emb_rstd = a.take(N);
  v.scratch = a.take(N * C);
  v.layers.assign(static_cast<std::size_t>(cfg.n_layer), LayerActs{});
  for (LayerActs& la : v.layers) {
    la.qkv = a.take(3 * N * C);
    la.atty = a.take(N * C);
    la.att = a.take(att);
    la.res1 = a.take(N * C);
    la.ln1 = a.take(N * C);
    la.ln1_mean = a.take(N);
    la.ln1_rstd = a.take(N);
    la.fch = a.take(4 * N * C);
    la.fch_gelu = a.take(4 * N * C);
    la.res2 = a.take(N * C);
    la.ln2 = a.take(N * C);
    la.ln2_mean = a.take(N);
    la.ln2_rstd = a.take(N);
  }
  v.head = a.take(N * C);
  v.head_gelu = a.take(N * C);
  v.head_ln = a.take(N * C);
  v.head_mean = a.take(N);
  v.head_rstd = a.take(N);
  v.logits = a.take(N * V);
  v.probs = a.take(N * V);
  v.losses = a.take(N);
  v.acts_floats = a.used();
  static_cast<TransformerGrads&>(v) = TransformerGrads::carve(dacts, N, C, att);
  return v;
}

std::pair<std::size_t, std::size_t> Bert::arena_floats(int B, int T) const {
  const Views v = carve(cfg_, nullptr, nullptr, B, T);
  return {v.acts_floats, v.dacts_floats};
}

void Bert::carve_views() {
  v_ = carve(cfg_, acts_buf_.as<float>(), dacts_buf_.as<float>(), res_B_, res_T_);
}

StepFlops Bert::flops_for(const BertConfig& cfg, int B, int T) {
  // As Gpt2::flops_for (bidirectional attention really computes the full T x T), plus the masked-LM
  // head's transform and decoder on every position.
  const double N = static_cast<double>(B) * T;
  const double C = cfg.n_embd;
  const double head = 2.0 * N * C * (C + cfg.vocab_size);
  StepFlops f;
  f.forward = cfg.n_layer * transformer_block_flops(B, T, cfg.n_embd) + head;
  f.backward = 2.0 * f.forward;
  return f;
}

std::size_t Bert::activation_bytes_for(const BertConfig& cfg, int B, int T) {
  const Views sz = carve(cfg, nullptr, nullptr, B, T);
  return token_arena_bytes(sz.acts_floats, sz.dacts_floats, B, T);
}

}  // namespace tt
