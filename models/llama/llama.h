// Llama family: configuration, presets and the model, with explicit forward and backward passes over the
// backend interface (no autograd), in the style of models/gpt2.
//
// The architecture (Touvron et al. 2023; Llama 3, SmolLM2): token embedding without learned positions,
// pre-norm blocks with RMSNorm (eps 1e-5), rotary position embeddings on queries and keys (base per
// preset, HF's rotate_half layout), grouped-query causal attention (n_kv_head key/value heads shared by
// n_head / n_kv_head query heads each, head size n_embd / n_head), a SwiGLU MLP of width ffn_hidden, a
// final RMSNorm and a language-model head, tied to the embedding or its own matrix. No biases.
//
// Parameter layout (one flat buffer, forward order, PyTorch Linear layout (OC, IC), the names of a
// Llama safetensors checkpoint; QW = n_head * HS, KW = n_kv_head * HS):
//   model.embed_tokens.weight (V, C),
//   per layer l, prefix model.layers.l.: input_layernorm.weight (C), self_attn.q_proj.weight (QW, C),
//     self_attn.k_proj.weight (KW, C), self_attn.v_proj.weight (KW, C), self_attn.o_proj.weight (C, QW),
//     post_attention_layernorm.weight (C), mlp.gate_proj.weight (F, C), mlp.up_proj.weight (F, C),
//     mlp.down_proj.weight (C, F),
//   model.norm.weight (C), lm_head.weight (V, C) when untied.
// Note [Stacked projections]: q_proj, k_proj and v_proj are consecutive, so together they are one
// (QW + 2 KW, C) matrix and one matmul gives the qkv rows gqa_attention_forward reads; gate_proj and
// up_proj likewise give the (gate | up) rows swiglu_forward reads. The forward, backward and
// layer_params() rely on this order.
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

struct LlamaPreset;

struct LlamaConfig {
  int n_layer = 0;
  int n_head = 0;
  int n_kv_head = 0;
  int n_embd = 0;           // C
  int ffn_hidden = 0;       // F: SwiGLU width
  int vocab_size = 0;       // V
  int context = 0;          // the longest sequence (no parameters depend on it)
  float rope_base = 10000;  // theta of the rotary embeddings
  bool tied = true;         // lm head = embedding

  int head_size() const { return n_embd / n_head; }
  int qkv_width() const { return (n_head + 2 * n_kv_head) * head_size(); }
  // Throws InputError when a value is not positive, n_embd % n_head != 0, n_head % n_kv_head != 0 or the
  // head size is odd (rotary embeddings turn pairs).
  void validate() const;
  std::size_t num_params() const;
  std::size_t block_params() const;  // one decoder block's floats (a ZeRO-3 unit)
  std::string describe() const;      // e.g. "L=16 H=32/8 C=2048 F=8192 V=128256 T=131072 tied"

  static std::vector<LlamaPreset> presets();
  static LlamaConfig preset(const std::string& name);  // InputError listing the names on an unknown one
  static bool is_preset(const std::string& name);
};

struct LlamaPreset {
  std::string name;
  LlamaConfig config;
  std::string note;  // one line for `teetrain models`
};

class Llama final : public TokenModel, public CausalLm {
 public:
  // Allocates the parameter and gradient buffers (zeroed); call init_params() or load parameters.
  Llama(Backend& backend, LlamaConfig cfg, std::string name = "");

  void init_params(uint64_t seed) override;
  float forward(const Batch& batch) override;
  void backward(const GradReadyFn& on_ready) override;
  // One unit per transformer block (Note [Parameter units]).
  std::vector<ParamUnit> param_units() const override {
    return block_units(layer_offset0_, layer_stride_, cfg_.n_layer);
  }
  StepFlops flops(int B, int T) const override { return flops_for(cfg_, B, T); }
  std::size_t activation_bytes(int B, int T) const override { return activation_bytes_for(cfg_, B, T); }
  static StepFlops flops_for(const LlamaConfig& cfg, int B, int T);
  static std::size_t activation_bytes_for(const LlamaConfig& cfg, int B, int T);
  // Names, shapes and offsets without allocating anything (paper-scale shapes, tools).
  static std::vector<ParamInfo> param_table(const LlamaConfig& cfg);

  const LlamaConfig& config() const { return cfg_; }
  int max_context() const override { return cfg_.context; }
  std::vector<float> forward_logits(const std::vector<int32_t>& tokens, int B, int T) override;
  // Device logits (B, T, V) of the last forward(batch); backward() overwrites them (dlogits).
  const float* logits() const { return v_.logits; }

 private:
  // Device pointers to one layer's parameters (or their gradients); Note [Stacked projections].
  struct LayerParams {
    float* ln1w;   // (C)               input_layernorm
    float* qkvw;   // (QW + 2 KW, C)    q_proj, k_proj, v_proj
    float* ow;     // (C, QW)           o_proj
    float* ln2w;   // (C)               post_attention_layernorm
    float* guw;    // (2F, C)           gate_proj, up_proj
    float* downw;  // (C, F)            down_proj
  };
  // One layer's saved activations.
  struct LayerActs {
    float* ln1;       // (B, T, C)
    float* ln1_rstd;  // (B, T)
    float* qkv;       // (B, T, QW + 2 KW) after the rotary embeddings
    float* atty;      // (B, T, QW)        attention output before o_proj
    float* att;       // (B, NH, T, T)     softmax probabilities
    float* res2;      // (B, T, C)         residual after attention
    float* ln2;       // (B, T, C)
    float* ln2_rstd;  // (B, T)
    float* gu;        // (B, T, 2F)        gate | up
    float* h;         // (B, T, F)         silu(gate) * up
    float* res3;      // (B, T, C)         residual after the MLP = input of the next layer
  };
  // The gradient arena (TransformerGrads, wide = max(2F, QW + 2 KW)): dbtc holds dlnf, dln2, datty, dln1
  // in turn; dbt4c_a dgu (B, T, 2F), then dqkv (B, T, QW + 2 KW); dbt4c_b dh (B, T, F).
  struct Views : TransformerGrads {
    float* encoded = nullptr;       // (B, T, C)  embed_tokens[tokens] = input of layer 0
    float* scratch = nullptr;       // (B, T, C)  o_proj and down_proj outputs before the residual add
    std::vector<LayerActs> layers;  // (n_layer)
    float* lnf = nullptr;           // (B, T, C)
    float* lnf_rstd = nullptr;      // (B, T)
    float* logits = nullptr;        // (B, T, V) also dlogits in backward
    float* probs = nullptr;         // (B, T, V)
    float* losses = nullptr;        // (B, T)
    std::size_t acts_floats = 0;
  };
  int context() const override { return cfg_.context; }
  std::pair<std::size_t, std::size_t> arena_floats(int B, int T) const override;
  void carve_views() override;
  static Views carve(const LlamaConfig& cfg, float* acts, float* dacts, int B, int T);
  LayerParams layer_params(float* base, int l) const;
  const float* head(const float* base) const { return base + head_offset_; }  // (V, C)

  void forward_trunk(int B, int T);  // tokens on device -> lnf (B, T, C)

  LlamaConfig cfg_;
  std::size_t layer_offset0_ = 0;  // offset of model.layers.0.input_layernorm.weight
  std::size_t layer_stride_ = 0;   // floats per block
  std::size_t norm_offset_ = 0;    // offset of model.norm.weight
  std::size_t head_offset_ = 0;    // offset of lm_head.weight, or 0 (embed_tokens) when tied

  Views v_;
  int cur_B_ = 0;  // shape of the last forward(batch)
  int cur_T_ = 0;
};

}  // namespace tt
