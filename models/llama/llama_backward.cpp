// Llama backward pass: the exact reverse of llama_forward.cpp.
//
// As GPT-2's: every backend *_backward op accumulates, so each activation-gradient buffer is zeroed right
// before the op that produces it, and the residual stream's gradient lives in one buffer (dresidual) into
// which the RMSNorm backward ops accumulate. rope_backward turns dqkv back in place (core/backend.h).
//
// Gradient readiness: parameters are in forward order, so on_ready(from) is called after the lm head
// (untied), after the final norm, after each layer, and with 0 after the embedding.
#include "base/error.h"
#include "models/llama/llama.h"

namespace tt {

void Llama::backward(const GradReadyFn& on_ready) {
  if (!have_forward_) throw RunError("llama: backward() without a preceding forward(batch)");
  auto ready = [&on_ready](std::size_t from) {
    if (on_ready) on_ready(from);
  };
  const int B = cur_B_;
  const int T = cur_T_;
  const int C = cfg_.n_embd;
  const int NH = cfg_.n_head;
  const int NKV = cfg_.n_kv_head;
  const int HS = cfg_.head_size();
  const int QKV = cfg_.qkv_width();
  const int F = cfg_.ffn_hidden;
  const int V = cfg_.vocab_size;
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  const std::size_t Nz = static_cast<std::size_t>(N);
  float* params = params_buf_.as<float>();
  float* grads = grads_buf_.as<float>();

  // Loss and lm head: the loss is the mean over N positions, hence dloss = 1/N per position.
  float* dlogits = v_.logits;  // (B, T, V): backward no longer needs the logits
  backend_.fill(dlogits, 0.0f, Nz * static_cast<std::size_t>(V));
  backend_.softmax_xent_backward(dlogits, v_.probs, targets_, N, V, V, 1.0f / static_cast<float>(N));
  float* dlnf = v_.dbtc;  // (B, T, C)
  backend_.fill(dlnf, 0.0f, NC);
  backend_.matmul_backward(dlnf, grads + head_offset_, nullptr, dlogits, v_.lnf, head(params), N, C, V);
  if (!cfg_.tied) ready(head_offset_);

  const float* last = cfg_.n_layer > 0 ? v_.layers.back().res3 : v_.encoded;
  backend_.fill(v_.dresidual, 0.0f, NC);
  backend_.rmsnorm_backward(v_.dresidual, grads + norm_offset_, dlnf, last, params + norm_offset_,
                            v_.lnf_rstd, N, C);
  ready(norm_offset_);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    const UnitUse use(gate_, l, UnitPass::Backward);  // Note [Parameter units]
    const LayerParams p = layer_params(params, l);
    const LayerParams g = layer_params(grads, l);
    const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
    const float* residual = l == 0 ? v_.encoded : v_.layers[static_cast<std::size_t>(l) - 1].res3;
    float* dh = v_.dbt4c_b;    // (B, T, F)
    float* dgu = v_.dbt4c_a;   // (B, T, 2F)
    float* dqkv = v_.dbt4c_a;  // (B, T, QKV), after dgu is dead
    float* dbtc = v_.dbtc;     // (B, T, C): dln2, datty, dln1 in turn

    // MLP. dresidual holds d(res3), which flows both into down_proj and straight to res2.
    backend_.fill(dh, 0.0f, Nz * static_cast<std::size_t>(F));
    backend_.matmul_backward(dh, g.downw, nullptr, v_.dresidual, a.h, p.downw, N, F, C);
    backend_.fill(dgu, 0.0f, 2 * Nz * static_cast<std::size_t>(F));
    backend_.swiglu_backward(dgu, a.gu, dh, N, F);
    backend_.fill(dbtc, 0.0f, NC);  // dln2
    backend_.matmul_backward(dbtc, g.guw, nullptr, dgu, a.ln2, p.guw, N, C, 2 * F);
    backend_.rmsnorm_backward(v_.dresidual, g.ln2w, dbtc, a.res2, p.ln2w, a.ln2_rstd, N, C);
    // dresidual now holds d(res2).

    // Attention.
    backend_.fill(dbtc, 0.0f, NC);  // datty
    backend_.matmul_backward(dbtc, g.ow, nullptr, v_.dresidual, a.atty, p.ow, N, NH * HS, C);
    backend_.fill(dqkv, 0.0f, Nz * static_cast<std::size_t>(QKV));
    backend_.gqa_attention_backward(dqkv, v_.datt, dbtc, a.qkv, a.att, B, T, NH, NKV, HS,
                                    AttentionMask::Causal);
    backend_.rope_backward(dqkv, B, T, QKV, NH + NKV, HS, cfg_.rope_base);
    backend_.fill(dbtc, 0.0f, NC);  // dln1
    backend_.matmul_backward(dbtc, g.qkvw, nullptr, dqkv, a.ln1, p.qkvw, N, C, QKV);
    backend_.rmsnorm_backward(v_.dresidual, g.ln1w, dbtc, residual, p.ln1w, a.ln1_rstd, N, C);
    // dresidual now holds d(input of layer l).
    ready(layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_);
  }

  backend_.encoder_backward(grads, nullptr, v_.dresidual, tokens_, B, T, C);
  ready(0);
}

}  // namespace tt
