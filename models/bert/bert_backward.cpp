// BERT backward pass: the exact reverse of bert_forward.cpp.
//
// Every backend *_backward op accumulates, so each activation-gradient buffer is zeroed (or seeded)
// right before the op that produces it. Post-LN blocks put a LayerNorm after each residual add, so the
// residual gradient is seeded by a copy: d(ln1) = d(res2) (the skip) + the MLP path accumulated on top.
//
// Gradient readiness: parameters are in forward order. on_ready(from) is called after the head, after
// each layer, and with 0 after the embeddings (the word embeddings are tied to the decoder, so their
// gradient is final only at the very end).
#include "base/error.h"
#include "models/bert/bert.h"

namespace tt {

void Bert::backward_head(float* params, float* grads) {
  const int N = cur_B_ * cur_T_;
  const int C = cfg_.n_embd;
  const int V = cfg_.vocab_size;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  const HeadParams p = head_params(params);
  const HeadParams g = head_params(grads);
  const float* x = cfg_.n_layer > 0 ? v_.layers.back().ln2 : v_.emb;  // (B, T, C) head input

  // The loss is the mean over the predicted positions: dloss = 1/predicted on each of them.
  float* dlogits = v_.logits;  // (B, T, V): the logits are dead, reuse their memory
  backend_.fill(dlogits, 0.0f, static_cast<std::size_t>(N) * static_cast<std::size_t>(V));
  backend_.softmax_xent_backward(dlogits, v_.probs, targets_, N, V, V,
                                 1.0f / static_cast<float>(cur_predicted_));
  float* dhead_ln = v_.dbtc;  // (B, T, C)
  backend_.fill(dhead_ln, 0.0f, NC);
  backend_.matmul_backward(dhead_ln, grads, g.bias, dlogits, v_.head_ln, params, N, C,
                           V);     // decoder = word^T
  float* dhead_gelu = v_.dbt4c_a;  // (B, T, C)
  backend_.fill(dhead_gelu, 0.0f, NC);
  backend_.layernorm_backward(dhead_gelu, g.lnw, g.lnb, dhead_ln, v_.head_gelu, p.lnw, v_.head_mean,
                              v_.head_rstd, N, C);
  float* dhead = v_.dbt4c_b;  // (B, T, C)
  backend_.fill(dhead, 0.0f, NC);
  backend_.gelu_backward(dhead, v_.head, dhead_gelu, NC);
  backend_.fill(v_.dresidual, 0.0f, NC);
  backend_.matmul_backward(v_.dresidual, g.densew, g.denseb, dhead, x, p.densew, N, C, C);
}

void Bert::backward_layer(float* params, float* grads, int l) {
  const int B = cur_B_;
  const int T = cur_T_;
  const int N = B * T;
  const int C = cfg_.n_embd;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  const LayerParams p = layer_params(params, l);
  const LayerParams g = layer_params(grads, l);
  const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
  const float* x = l == 0 ? v_.emb : v_.layers[static_cast<std::size_t>(l) - 1].ln2;  // (B, T, C)
  float* dx = v_.dresidual;       // (B, T, C): d(ln2) on entry, d(x) on exit
  float* dres = v_.dbtc;          // (B, T, C): d(res2), then d(res1)
  float* dfch_gelu = v_.dbt4c_a;  // (B, T, 4C)
  float* dfch = v_.dbt4c_b;       // (B, T, 4C)
  float* dqkv = v_.dbt4c_a;       // (B, T, 3C), after dfch_gelu is dead
  float* datty = v_.dbt4c_b;      // (B, T, C), after dfch is dead

  // LayerNorm 2, then the MLP: res2 = ln1 + dense(gelu(dense(ln1))).
  backend_.fill(dres, 0.0f, NC);
  backend_.layernorm_backward(dres, g.ln2w, g.ln2b, dx, a.res2, p.ln2w, a.ln2_mean, a.ln2_rstd, N, C);
  backend_.copy(dx, dres, NC * sizeof(float));  // d(ln1): the skip path first
  backend_.fill(dfch_gelu, 0.0f, 4 * NC);
  backend_.matmul_backward(dfch_gelu, g.fcprojw, g.fcprojb, dres, a.fch_gelu, p.fcprojw, N, 4 * C, C);
  backend_.fill(dfch, 0.0f, 4 * NC);
  backend_.gelu_backward(dfch, a.fch, dfch_gelu, 4 * NC);
  backend_.matmul_backward(dx, g.fcw, g.fcb, dfch, a.ln1, p.fcw, N, C, 4 * C);

  // LayerNorm 1, then attention: res1 = x + dense(attn(qkv(x))).
  backend_.fill(dres, 0.0f, NC);
  backend_.layernorm_backward(dres, g.ln1w, g.ln1b, dx, a.res1, p.ln1w, a.ln1_mean, a.ln1_rstd, N, C);
  backend_.copy(dx, dres, NC * sizeof(float));  // d(x): the skip path first
  backend_.fill(datty, 0.0f, NC);
  backend_.matmul_backward(datty, g.projw, g.projb, dres, a.atty, p.projw, N, C, C);
  backend_.fill(dqkv, 0.0f, 3 * NC);
  backend_.attention_backward(dqkv, v_.datt, datty, a.qkv, a.att, B, T, C, cfg_.n_head,
                              AttentionMask::Bidirectional);
  backend_.matmul_backward(dx, g.qkvw, g.qkvb, dqkv, x, p.qkvw, N, C, 3 * C);
}

void Bert::backward(const GradReadyFn& on_ready) {
  if (!have_forward_) throw RunError("bert: backward() without a preceding forward(batch)");
  auto ready = [&on_ready](std::size_t from) {
    if (on_ready) on_ready(from);
  };
  float* params = params_buf_.as<float>();
  float* grads = grads_buf_.as<float>();
  backward_head(params, grads);
  ready(head_offset_);
  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    backward_layer(params, grads, l);
    ready(layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_);
  }
  // Embeddings: LayerNorm, then word + position (encoder) and type 0 (a bias on every row).
  const int B = cur_B_;
  const int T = cur_T_;
  const int N = B * T;
  const int C = cfg_.n_embd;
  float* demb_sum = v_.dbtc;  // (B, T, C)
  backend_.fill(demb_sum, 0.0f, static_cast<std::size_t>(N) * static_cast<std::size_t>(C));
  backend_.layernorm_backward(demb_sum, grads + emb_ln_offset_, grads + emb_ln_offset_ + C, v_.dresidual,
                              v_.emb_sum, params + emb_ln_offset_, v_.emb_mean, v_.emb_rstd, N, C);
  backend_.encoder_backward(grads, grads + params_[1].offset, demb_sum, tokens_, B, T, C);
  backend_.matmul_backward(nullptr, nullptr, grads + params_[2].offset, demb_sum, nullptr, nullptr, N, C, C);
  ready(0);
}

}  // namespace tt
