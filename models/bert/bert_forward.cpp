// BERT forward pass: embeddings + LayerNorm -> n_layer post-LN encoder blocks -> masked-LM head ->
// loss over the predicted positions. Every activation backward needs is kept (see Bert::Views).
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "models/bert/bert.h"

namespace tt {

namespace {

// Checks ids against [0, V) (targets may also be kIgnoreTarget) and counts the predicted positions.
int check_batch(const Batch& b, int V) {
  const std::size_t n = static_cast<std::size_t>(b.B) * static_cast<std::size_t>(b.T);
  if (b.tokens.size() != n || b.targets.size() != n) {
    throw InputError("bert: batch has " + std::to_string(b.tokens.size()) + " tokens and " +
                     std::to_string(b.targets.size()) + " targets, expected " + std::to_string(n) + " each");
  }
  for (int32_t t : b.tokens) {
    if (t < 0 || t >= V) {
      throw InputError("bert: token id " + std::to_string(t) + " outside the vocabulary [0, " +
                       std::to_string(V) + ")");
    }
  }
  int predicted = 0;
  for (int32_t t : b.targets) {
    if (t == kIgnoreTarget) continue;
    if (t < 0 || t >= V) {
      throw InputError("bert: target id " + std::to_string(t) + " outside the vocabulary [0, " +
                       std::to_string(V) + ") and not kIgnoreTarget (" + std::to_string(kIgnoreTarget) + ")");
    }
    ++predicted;
  }
  if (predicted == 0) {
    throw InputError(
        "bert: the batch predicts no position (every target is kIgnoreTarget): masked-LM batches "
        "come from engine/input/mlm_masking.h");
  }
  return predicted;
}

}  // namespace

int Bert::forward_to_logits(const Batch& batch) {
  const int B = batch.B;
  const int T = batch.T;
  reserve(B, T);
  const int predicted = check_batch(batch, cfg_.vocab_size);
  const std::size_t Nz = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  backend_.copy_to_device(tokens_, batch.tokens.data(), Nz * sizeof(int32_t));
  backend_.copy_to_device(targets_, batch.targets.data(), Nz * sizeof(int32_t));
  const int C = cfg_.n_embd;
  const int NH = cfg_.n_head;
  const int V = cfg_.vocab_size;
  const int N = B * T;
  const std::size_t NC = Nz * static_cast<std::size_t>(C);
  float* params = params_buf_.as<float>();
  const float* word = params;                       // (V, C)
  const float* pos = params + params_[1].offset;    // (maxT, C)
  const float* type0 = params + params_[2].offset;  // (C): row of token type 0
  const float* emb_lnw = params + emb_ln_offset_;   // (C)

  // Embeddings: word + position + type 0, then LayerNorm.
  backend_.encoder_forward(v_.emb_sum, tokens_, word, pos, B, T, C);
  backend_.add_bias(v_.emb_sum, type0, N, C);
  backend_.layernorm_forward(v_.emb, v_.emb_mean, v_.emb_rstd, v_.emb_sum, emb_lnw, emb_lnw + C, N, C);
  const float* x = v_.emb;  // (B, T, C) input of the current layer
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const LayerParams p = layer_params(params, l);
    const LayerActs& a = v_.layers[static_cast<std::size_t>(l)];
    // Attention sub-block, post-LN: ln1 = LayerNorm(x + dense(attn(qkv(x))))
    backend_.matmul_forward(a.qkv, x, p.qkvw, p.qkvb, N, C, 3 * C);
    backend_.attention_forward(a.atty, a.att, a.qkv, B, T, C, NH, AttentionMask::Bidirectional);
    backend_.matmul_forward(v_.scratch, a.atty, p.projw, p.projb, N, C, C);
    backend_.add(a.res1, x, v_.scratch, NC);
    backend_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.res1, p.ln1w, p.ln1b, N, C);
    // MLP sub-block: ln2 = LayerNorm(ln1 + dense(gelu(dense(ln1))))
    backend_.matmul_forward(a.fch, a.ln1, p.fcw, p.fcb, N, C, 4 * C);
    backend_.gelu_forward(a.fch_gelu, a.fch, 4 * NC);
    backend_.matmul_forward(v_.scratch, a.fch_gelu, p.fcprojw, p.fcprojb, N, 4 * C, C);
    backend_.add(a.res2, a.ln1, v_.scratch, NC);
    backend_.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2w, p.ln2b, N, C);
    x = a.ln2;
  }
  // Masked-LM head: LayerNorm(gelu(dense(x))) @ word^T + bias, on every position.
  const HeadParams h = head_params(params);
  backend_.matmul_forward(v_.head, x, h.densew, h.denseb, N, C, C);
  backend_.gelu_forward(v_.head_gelu, v_.head, NC);
  backend_.layernorm_forward(v_.head_ln, v_.head_mean, v_.head_rstd, v_.head_gelu, h.lnw, h.lnb, N, C);
  backend_.matmul_forward(v_.logits, v_.head_ln, word, h.bias, N, C, V);
  cur_B_ = B;
  cur_T_ = T;
  cur_predicted_ = predicted;
  return predicted;
}

float Bert::forward(const Batch& batch) {
  const int predicted = forward_to_logits(batch);
  const int N = batch.B * batch.T;
  const int V = cfg_.vocab_size;
  backend_.softmax_xent_forward(v_.losses, v_.probs, v_.logits, targets_, N, V, V);
  have_forward_ = true;
  // Ignored positions contribute 0 to the sum: the mean over the predicted ones is sum / predicted.
  const double sum = backend_.mean(v_.losses, static_cast<std::size_t>(N)) * N;
  return static_cast<float>(sum / predicted);
}

EvalResult Bert::evaluate(const Batch& batch) {
  const float mean = forward(batch);
  EvalResult r;
  r.count = cur_predicted_;
  r.loss_sum = static_cast<double>(mean) * cur_predicted_;
  r.correct = 0;
  // Accuracy needs the argmax of the predicted rows only (15% of them): copy those, not (B, T, V).
  const auto V = static_cast<std::size_t>(cfg_.vocab_size);
  std::vector<float> row(V);
  for (std::size_t n = 0; n < batch.targets.size(); ++n) {
    if (batch.targets[n] == kIgnoreTarget) continue;
    backend_.copy_to_host(row.data(), v_.logits + n * V, V * sizeof(float));
    r.correct += std::max_element(row.begin(), row.end()) - row.begin() == batch.targets[n] ? 1 : 0;
  }
  return r;
}

}  // namespace tt
