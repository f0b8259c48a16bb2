// GPT-2 forward pass: encoder -> n_layer pre-LN transformer blocks -> ln_f -> tied lm head -> loss.
// Every activation that backward needs is kept in the arena (see Gpt2::Views for shapes).
#include <algorithm>

#include "base/error.h"
#include "models/gpt2/gpt2.h"

namespace tt {

void Gpt2::forward_trunk(int B, int T) {
  const int C = cfg_.n_embd;
  const int NH = cfg_.n_head;
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  float* params = params_buf_.as<float>();
  const float* wte = params + params_[0].offset;  // (Vp, C)
  const float* wpe = params + params_[1].offset;  // (maxT, C)

  backend_.encoder_forward(v_.encoded, tokens_, wte, wpe, B, T, C);
  const float* residual = v_.encoded;  // (B, T, C) input of the current layer
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const UnitUse use(gate_, l, UnitPass::Forward);  // Note [Parameter units]
    const LayerParams p = layer_params(params, l);
    const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
    // Attention sub-block: res2 = residual + c_proj(attn(c_attn(ln_1(residual))))
    backend_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, residual, p.ln1w, p.ln1b, N, C);
    backend_.matmul_forward(a.qkv, a.ln1, p.qkvw, p.qkvb, N, C, 3 * C);
    backend_.attention_forward(a.atty, a.att, a.qkv, B, T, C, NH, AttentionMask::Causal);
    backend_.matmul_forward(v_.scratch, a.atty, p.attprojw, p.attprojb, N, C, C);
    backend_.add(a.res2, residual, v_.scratch, NC);
    // MLP sub-block: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2))))
    backend_.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2w, p.ln2b, N, C);
    backend_.matmul_forward(a.fch, a.ln2, p.fcw, p.fcb, N, C, 4 * C);
    backend_.gelu_forward(a.fch_gelu, a.fch, 4 * NC);
    backend_.matmul_forward(v_.scratch, a.fch_gelu, p.fcprojw, p.fcprojb, N, 4 * C, C);
    backend_.add(a.res3, a.res2, v_.scratch, NC);
    residual = a.res3;
  }
  const float* lnfw = params + lnf_offset_;  // (C)
  const float* lnfb = lnfw + C;              // (C)
  backend_.layernorm_forward(v_.lnf, v_.lnf_mean, v_.lnf_rstd, residual, lnfw, lnfb, N, C);
}

float Gpt2::forward(const Batch& batch) {
  const int B = batch.B;
  const int T = batch.T;
  reserve(B, T);  // validates the shape; no-op when the arenas are large enough
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  check_token_ids(batch.tokens, N, cfg_.vocab_size, "gpt2", "token");
  check_token_ids(batch.targets, N, cfg_.vocab_size, "gpt2", "target");
  backend_.copy_to_device(tokens_, batch.tokens.data(), N * sizeof(int32_t));
  backend_.copy_to_device(targets_, batch.targets.data(), N * sizeof(int32_t));

  forward_trunk(B, T);
  const int C = cfg_.n_embd;
  const int V = cfg_.vocab_size;
  const int Vp = cfg_.padded_vocab();
  const float* wte = params_buf_.as<float>();  // (Vp, C), tied lm head
  backend_.matmul_forward(v_.logits, v_.lnf, wte, nullptr, B * T, C, Vp);
  backend_.softmax_xent_forward(v_.losses, v_.probs, v_.logits, targets_, B * T, V, Vp);
  cur_B_ = B;
  cur_T_ = T;
  have_forward_ = true;
  return static_cast<float>(backend_.mean(v_.losses, N));
}

std::vector<float> Gpt2::forward_logits(const std::vector<int32_t>& tokens, int B, int T) {
  reserve(B, T);
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  check_token_ids(tokens, N, cfg_.vocab_size, "gpt2", "token");
  backend_.copy_to_device(tokens_, tokens.data(), N * sizeof(int32_t));
  have_forward_ = false;  // the arenas no longer hold a forward that backward() could use
  forward_trunk(B, T);

  return last_position_logits(v_.lnf, v_.scratch, v_.logits, params_buf_.as<float>(), B, T, cfg_.n_embd,
                              cfg_.vocab_size, cfg_.padded_vocab());  // tied lm head: wte
}

}  // namespace tt
