// BERT family: configuration, presets and the model trained with masked-language modelling, with
// explicit forward and backward passes over the backend interface (no autograd), like models/gpt2.
//
// The architecture is BERT's (Devlin et al. 2019; HF BertForMaskedLM): word + position + token-type
// embeddings and a LayerNorm, n_layer post-LN encoder blocks (bidirectional self-attention, GELU MLP of
// width 4C), and the masked-LM head: dense (C, C) + GELU + LayerNorm, then a decoder tied to the word
// embeddings with its own bias (V). No pooler (it serves next-sentence prediction, which RoBERTa showed
// is not needed): the count equals HF BertForMaskedLM's. Differences from the published model, each
// stated where it matters: LayerNorm eps 1e-5 (BERT: 1e-12), GELU with the tanh approximation (BERT:
// erf; they differ by < 1e-3), and every token of type 0 (one segment per window).
//
// Parameter layout (one flat buffer, forward order, PyTorch Linear layout (OC, IC), HF's names except
// that query, key and value are one (3C, C) matrix, HF's three stacked):
//   embeddings.word_embeddings.weight (V, C), .position_embeddings.weight (maxT, C),
//   .token_type_embeddings.weight (2, C), embeddings.LayerNorm.{weight,bias} (C),
//   per layer l (prefix encoder.layer.l.): attention.self.qkv.{weight (3C, C), bias (3C)},
//     attention.output.dense.{weight (C, C), bias (C)}, attention.output.LayerNorm.{weight,bias} (C),
//     intermediate.dense.{weight (4C, C), bias (4C)}, output.dense.{weight (C, 4C), bias (C)},
//     output.LayerNorm.{weight,bias} (C),
//   cls.predictions.transform.dense.{weight (C, C), bias (C)}, cls.predictions.transform.LayerNorm.{weight,
//   bias} (C), cls.predictions.bias (V).
//
// Masked LM: a batch's targets hold the original token at the positions to predict and kIgnoreTarget
// elsewhere; the loss is the mean cross-entropy over the predicted positions. The last id of the
// vocabulary is [MASK] (engine/input/mlm_masking.h makes such batches from text windows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/model.h"
#include "models/common/token_model.h"

namespace tt {

struct BertPreset;

struct BertConfig {
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;      // C; the MLP is 4C wide, as in every published BERT
  int vocab_size = 0;  // V, [MASK] included: 30522 for the published shapes, 257 for byte-level text
  int context = 0;     // maxT: rows of the position embeddings (512 published)
  static constexpr int kTypeVocab = 2;

  int mask_token() const { return vocab_size - 1; }
  // Throws InputError when a value is not positive, n_embd % n_head != 0 or V < 2.
  void validate() const;
  std::size_t num_params() const;
  std::size_t block_params() const;  // one encoder layer's floats (a ZeRO-3 unit)
  std::string describe() const;      // e.g. "L=12 H=12 C=768 V=30522 T=512"

  static std::vector<BertPreset> presets();
  static bool is_preset(const std::string& name);
  // Throws InputError listing the valid names on an unknown one.
  static BertConfig preset(const std::string& name);
};

struct BertPreset {
  std::string name;
  BertConfig config;
  std::string note;
};

class Bert final : public TokenModel {
 public:
  Bert(Backend& backend, BertConfig cfg, std::string name = "");

  void init_params(uint64_t seed) override;
  // Mean cross-entropy over the positions whose target is not kIgnoreTarget; InputError when there
  // is none.
  float forward(const Batch& batch) override;
  void backward(const GradReadyFn& on_ready) override;
  // count = predicted positions, loss_sum over them, correct = argmax hits among them.
  EvalResult evaluate(const Batch& batch) override;
  StepFlops flops(int B, int T) const override { return flops_for(cfg_, B, T); }
  std::size_t activation_bytes(int B, int T) const override { return activation_bytes_for(cfg_, B, T); }
  static StepFlops flops_for(const BertConfig& cfg, int B, int T);
  static std::size_t activation_bytes_for(const BertConfig& cfg, int B, int T);
  static std::vector<ParamInfo> param_table(const BertConfig& cfg);

  const BertConfig& config() const { return cfg_; }
  // Device logits (B, T, V) of the last forward(batch); backward() overwrites them (dlogits).
  const float* logits() const { return v_.logits; }

 private:
  struct LayerParams {
    float* qkvw;     // (3C, C)
    float* qkvb;     // (3C)
    float* projw;    // (C, C)
    float* projb;    // (C)
    float* ln1w;     // (C)  attention.output.LayerNorm
    float* ln1b;     // (C)
    float* fcw;      // (4C, C)
    float* fcb;      // (4C)
    float* fcprojw;  // (C, 4C)
    float* fcprojb;  // (C)
    float* ln2w;     // (C)  output.LayerNorm
    float* ln2b;     // (C)
  };
  struct HeadParams {
    float* densew;  // (C, C)
    float* denseb;  // (C)
    float* lnw;     // (C)
    float* lnb;     // (C)
    float* bias;    // (V) decoder bias; the decoder weight is the word embeddings
  };
  struct LayerActs {
    float* qkv;       // (B, T, 3C)
    float* atty;      // (B, T, C)   attention output before the output dense
    float* att;       // (B, NH, T, T) softmax probabilities
    float* res1;      // (B, T, C)   input + attention output = input of LayerNorm 1
    float* ln1;       // (B, T, C)
    float* ln1_mean;  // (B, T)
    float* ln1_rstd;  // (B, T)
    float* fch;       // (B, T, 4C)  intermediate dense output (GELU input)
    float* fch_gelu;  // (B, T, 4C)
    float* res2;      // (B, T, C)   ln1 + MLP output = input of LayerNorm 2
    float* ln2;       // (B, T, C)   the layer's output
    float* ln2_mean;  // (B, T)
    float* ln2_rstd;  // (B, T)
  };
  // The gradient arena (TransformerGrads): dbtc holds the LayerNorm input gradients; dbt4c_a dfch_gelu,
  // then dqkv (B, T, 3C), and dhead_gelu in the head; dbt4c_b dfch, then datty (B, T, C), and dhead in
  // the head.
  struct Views : TransformerGrads {
    float* emb_sum = nullptr;   // (B, T, C)  word + position + type embeddings
    float* emb = nullptr;       // (B, T, C)  their LayerNorm = input of layer 0
    float* emb_mean = nullptr;  // (B, T)
    float* emb_rstd = nullptr;  // (B, T)
    float* scratch = nullptr;   // (B, T, C)  dense outputs before the residual add (not saved)
    std::vector<LayerActs> layers;
    float* head = nullptr;        // (B, T, C)  transform dense output (GELU input)
    float* head_gelu = nullptr;   // (B, T, C)
    float* head_ln = nullptr;     // (B, T, C)  transform LayerNorm = decoder input
    float* head_mean = nullptr;   // (B, T)
    float* head_rstd = nullptr;   // (B, T)
    float* logits = nullptr;      // (B, T, V) also reused as dlogits in backward
    float* probs = nullptr;       // (B, T, V)
    float* losses = nullptr;      // (B, T)
    std::size_t acts_floats = 0;  // size of the forward activation arena
  };
  int context() const override { return cfg_.context; }
  std::pair<std::size_t, std::size_t> arena_floats(int B, int T) const override;
  void carve_views() override;
  static Views carve(const BertConfig& cfg, float* acts, float* dacts, int B, int T);
  LayerParams layer_params(float* base, int l) const;
  HeadParams head_params(float* base) const;
  // Copies a checked batch to the device, runs the encoder and the head; returns the predicted count.
  int forward_to_logits(const Batch& batch);
  void backward_head(float* params, float* grads);
  void backward_layer(float* params, float* grads, int l);

  BertConfig cfg_;
  std::size_t emb_ln_offset_ = 0;  // embeddings.LayerNorm.weight
  std::size_t layer_offset0_ = 0;  // encoder.layer.0's first tensor
  std::size_t layer_stride_ = 0;   // floats per encoder block
  std::size_t head_offset_ = 0;    // cls.predictions.transform.dense.weight

  Views v_;  // carved over the arenas (TokenModel) for res_B_ x res_T_

  int cur_B_ = 0;
  int cur_T_ = 0;
  int cur_predicted_ = 0;
};

}  // namespace tt
