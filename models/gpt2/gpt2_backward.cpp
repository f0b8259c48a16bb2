// GPT-2 backward pass: the exact reverse of gpt2_forward.cpp.
//
// Every backend *_backward op accumulates, so each activation-gradient buffer is zeroed right before
// the op that produces it. The residual stream needs no copies: its gradient lives in one buffer
// (dresidual) into which the layernorm backward ops accumulate their input gradient, which is exactly
// the sum that a residual connection calls for.
//
// Gradient readiness: parameters are laid out in forward order, so walking backward finalises them
// from the highest offset down. on_ready(from) is called after ln_f, after each layer, and with 0 after
// the encoder (wte is tied to the lm head, so its gradient is final only at the very end).
#include "base/error.h"
#include "models/gpt2/gpt2.h"

namespace tt {

void Gpt2::backward(const GradReadyFn& on_ready) {
  if (!have_forward_) throw RunError("gpt2: backward() without a preceding forward(batch)");
  auto ready = [&on_ready](std::size_t from) {
    if (on_ready) on_ready(from);
  };
  const int B = cur_B_;
  const int T = cur_T_;
  const int C = cfg_.n_embd;
  const int NH = cfg_.n_head;
  const int V = cfg_.vocab_size;
  const int Vp = cfg_.padded_vocab();
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  float* params = params_buf_.as<float>();
  float* grads = grads_buf_.as<float>();
  const float* wte = params;                // (Vp, C)
  float* dwte = grads;                      // (Vp, C)
  float* dwpe = grads + params_[1].offset;  // (maxT, C)

  // Loss and tied lm head. The loss is the mean over N positions, hence dloss = 1/N per position.
  float* dlogits = v_.logits;  // (B, T, Vp) logits are not needed by backward: reuse their memory
  backend_.fill(dlogits, 0.0f, static_cast<std::size_t>(N) * static_cast<std::size_t>(Vp));
  backend_.softmax_xent_backward(dlogits, v_.probs, targets_, N, V, Vp, 1.0f / static_cast<float>(N));
  float* dlnf = v_.dbtc;  // (B, T, C)
  backend_.fill(dlnf, 0.0f, NC);
  backend_.matmul_backward(dlnf, dwte, nullptr, dlogits, v_.lnf, wte, N, C, Vp);

  // ln_f: its input is the last layer's output.
  const float* last = cfg_.n_layer > 0 ? v_.layers.back().res3 : v_.encoded;
  backend_.fill(v_.dresidual, 0.0f, NC);
  backend_.layernorm_backward(v_.dresidual, grads + lnf_offset_, grads + lnf_offset_ + C, dlnf, last,
                              params + lnf_offset_, v_.lnf_mean, v_.lnf_rstd, N, C);
  ready(lnf_offset_);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    const UnitUse use(gate_, l, UnitPass::Backward);  // Note [Parameter units]
    const LayerParams p = layer_params(params, l);
    const LayerParams g = layer_params(grads, l);
    const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
    const float* residual = l == 0 ? v_.encoded : v_.layers[static_cast<std::size_t>(l) - 1].res3;
    float* dfch_gelu = v_.dbt4c_a;  // (B, T, 4C)
    float* dfch = v_.dbt4c_b;       // (B, T, 4C)
    float* dqkv = v_.dbt4c_a;       // (B, T, 3C), after dfch_gelu is dead
    float* dbtc = v_.dbtc;          // (B, T, C): dln2, datty, dln1 in turn

    // MLP sub-block. dresidual holds d(res3), which flows both into c_proj and straight to res2.
    backend_.fill(dfch_gelu, 0.0f, 4 * NC);
    backend_.matmul_backward(dfch_gelu, g.fcprojw, g.fcprojb, v_.dresidual, a.fch_gelu, p.fcprojw, N, 4 * C,
                             C);
    backend_.fill(dfch, 0.0f, 4 * NC);
    backend_.gelu_backward(dfch, a.fch, dfch_gelu, 4 * NC);
    backend_.fill(dbtc, 0.0f, NC);  // dln2
    backend_.matmul_backward(dbtc, g.fcw, g.fcb, dfch, a.ln2, p.fcw, N, C, 4 * C);
    backend_.layernorm_backward(v_.dresidual, g.ln2w, g.ln2b, dbtc, a.res2, p.ln2w, a.ln2_mean, a.ln2_rstd, N,
                                C);
    // dresidual now holds d(res2).

    // Attention sub-block.
    backend_.fill(dbtc, 0.0f, NC);  // datty
    backend_.matmul_backward(dbtc, g.attprojw, g.attprojb, v_.dresidual, a.atty, p.attprojw, N, C, C);
    backend_.fill(dqkv, 0.0f, 3 * NC);
    backend_.attention_backward(dqkv, v_.datt, dbtc, a.qkv, a.att, B, T, C, NH, AttentionMask::Causal);
    backend_.fill(dbtc, 0.0f, NC);  // dln1
    backend_.matmul_backward(dbtc, g.qkvw, g.qkvb, dqkv, a.ln1, p.qkvw, N, C, 3 * C);
    backend_.layernorm_backward(v_.dresidual, g.ln1w, g.ln1b, dbtc, residual, p.ln1w, a.ln1_mean, a.ln1_rstd,
                                N, C);
    // dresidual now holds d(input of layer l).
    ready(layer_offset0_ + static_cast<std::size_t>(l) * layer_stride_);
  }

  backend_.encoder_backward(dwte, dwpe, v_.dresidual, tokens_, B, T, C);
  ready(0);
}

}  // namespace tt
