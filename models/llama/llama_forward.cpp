// Llama forward pass: embedding -> n_layer pre-norm blocks (RMSNorm, rotary grouped-query attention,
// RMSNorm, SwiGLU MLP) -> final RMSNorm -> lm head -> loss. Every activation backward needs is kept in
// the arena (Llama::Views gives the shapes).
#include "base/error.h"
#include "models/llama/llama.h"

namespace tt {

namespace {

constexpr float kRmsNormEps = 1e-5f;  // every preset's rms_norm_eps

}  // namespace

void Llama::forward_trunk(int B, int T) {
  const int C = cfg_.n_embd;
  const int NH = cfg_.n_head;
  const int NKV = cfg_.n_kv_head;
  const int HS = cfg_.head_size();
  const int QKV = cfg_.qkv_width();
  const int F = cfg_.ffn_hidden;
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * static_cast<std::size_t>(C);
  float* params = params_buf_.as<float>();

  backend_.encoder_forward(v_.encoded, tokens_, params, nullptr, B, T, C);  // embed_tokens (V, C)
  const float* residual = v_.encoded;  // (B, T, C) input of the current layer
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const UnitUse use(gate_, l, UnitPass::Forward);  // Note [Parameter units]
    const LayerParams p = layer_params(params, l);
    const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
    // Attention: res2 = residual + o_proj(attn(rope(qkv(rmsnorm(residual))))); Note [Stacked projections].
    backend_.rmsnorm_forward(a.ln1, a.ln1_rstd, residual, p.ln1w, N, C, kRmsNormEps);
    backend_.matmul_forward(a.qkv, a.ln1, p.qkvw, nullptr, N, C, QKV);
    backend_.rope_forward(a.qkv, B, T, QKV, NH + NKV, HS, cfg_.rope_base);  // query and key heads
    backend_.gqa_attention_forward(a.atty, a.att, a.qkv, B, T, NH, NKV, HS, AttentionMask::Causal);
    backend_.matmul_forward(v_.scratch, a.atty, p.ow, nullptr, N, NH * HS, C);
    backend_.add(a.res2, residual, v_.scratch, NC);
    // MLP: res3 = res2 + down_proj(silu(gate_proj(x)) * up_proj(x)), x = rmsnorm(res2)
    backend_.rmsnorm_forward(a.ln2, a.ln2_rstd, a.res2, p.ln2w, N, C, kRmsNormEps);
    backend_.matmul_forward(a.gu, a.ln2, p.guw, nullptr, N, C, 2 * F);
    backend_.swiglu_forward(a.h, a.gu, N, F);
    backend_.matmul_forward(v_.scratch, a.h, p.downw, nullptr, N, F, C);
    backend_.add(a.res3, a.res2, v_.scratch, NC);
    residual = a.res3;
  }
  backend_.rmsnorm_forward(v_.lnf, v_.lnf_rstd, residual, params + norm_offset_, N, C, kRmsNormEps);
}

float Llama::forward(const Batch& batch) {
  const int B = batch.B;
  const int T = batch.T;
  reserve(B, T);  // validates the shape
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  check_token_ids(batch.tokens, N, cfg_.vocab_size, "llama", "token");
  check_token_ids(batch.targets, N, cfg_.vocab_size, "llama", "target");
  backend_.copy_to_device(tokens_, batch.tokens.data(), N * sizeof(int32_t));
  backend_.copy_to_device(targets_, batch.targets.data(), N * sizeof(int32_t));

  forward_trunk(B, T);
  const int V = cfg_.vocab_size;
  backend_.matmul_forward(v_.logits, v_.lnf, head(params_buf_.as<float>()), nullptr, B * T, cfg_.n_embd, V);
  backend_.softmax_xent_forward(v_.losses, v_.probs, v_.logits, targets_, B * T, V, V);
  cur_B_ = B;
  cur_T_ = T;
  have_forward_ = true;
  return static_cast<float>(backend_.mean(v_.losses, N));
}

std::vector<float> Llama::forward_logits(const std::vector<int32_t>& tokens, int B, int T) {
  reserve(B, T);
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  check_token_ids(tokens, N, cfg_.vocab_size, "llama", "token");
  backend_.copy_to_device(tokens_, tokens.data(), N * sizeof(int32_t));
  have_forward_ = false;  // the arenas no longer hold a forward that backward() could use
  forward_trunk(B, T);
  return last_position_logits(v_.lnf, v_.scratch, v_.logits, head(params_buf_.as<float>()), B, T, cfg_.n_embd,
                              cfg_.vocab_size, cfg_.vocab_size);
}

}  // namespace tt
