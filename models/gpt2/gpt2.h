// GPT-2 family: configuration, presets and the model, with explicit forward and backward passes over
// the backend interface (no autograd), in the style of llm.c.
//
// Parameter layout (one flat buffer, forward order, PyTorch Linear layout (OC, IC)):
//   wte (Vp, C), wpe (maxT, C),
//   per layer l: h.l.ln_1.{weight,bias} (C), h.l.attn.c_attn.weight (3C, C), .bias (3C),
//                h.l.attn.c_proj.weight (C, C), .bias (C), h.l.ln_2.{weight,bias} (C),
//                h.l.mlp.c_fc.weight (4C, C), .bias (4C), h.l.mlp.c_proj.weight (C, 4C), .bias (C),
//   ln_f.{weight,bias} (C).
// The language-model head is tied to wte. Note HF's GPT-2 stores Conv1D weights transposed (IC, OC);
// a converter must transpose c_attn, c_proj and c_fc weights.
//
// Vocabulary padding: wte has Vp = padded_vocab() rows, vocab_size rounded up to vocab_multiple (as
// llm.c's Vp, which helps GPU matmul alignment). The default vocab_multiple = 1 means no padding, so the
// flat buffer is exactly the published parameter count. Padded rows are initialised to zero, their
// logits are never read by the loss, and their gradients stay zero.
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

struct Gpt2Preset;

struct Gpt2Config {
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;          // C
  int vocab_size = 0;      // V: 50257 for the published GPT-2 shapes, 256 for byte-level text
  int context = 0;         // maxT: rows of wpe
  int vocab_multiple = 1;  // wte/logit rows are rounded up to a multiple of this (1 = no padding)

  int padded_vocab() const;  // Vp
  // Throws InputError when a value is not positive or n_embd % n_head != 0.
  void validate() const;
  // Floats in the flat parameter buffer (published count when vocab_multiple == 1).
  std::size_t num_params() const;
  std::size_t block_params() const;  // one transformer block's floats (a ZeRO-3 unit)
  std::string describe() const;      // e.g. "L=12 H=12 C=768 V=50257 T=1024"

  // Named presets; preset() throws InputError listing the valid names on an unknown name.
  static std::vector<Gpt2Preset> presets();
  static Gpt2Config preset(const std::string& name);
};

struct Gpt2Preset {
  std::string name;
  Gpt2Config config;
  std::string note;  // one line for `teetrain models`
};

class Gpt2 final : public TokenModel, public CausalLm {
 public:
  // Allocates the parameter and gradient buffers (zeroed); call init_params() or load parameters.
  // `name` is what name() reports (a preset name); empty -> "gpt2(" + cfg.describe() + ")".
  Gpt2(Backend& backend, Gpt2Config cfg, std::string name = "");

  void init_params(uint64_t seed) override;
  float forward(const Batch& batch) override;
  void backward(const GradReadyFn& on_ready) override;
  // One unit per transformer block (Note [Parameter units]).
  std::vector<ParamUnit> param_units() const override {
    return block_units(layer_offset0_, layer_stride_, cfg_.n_layer);
  }
  StepFlops flops(int B, int T) const override { return flops_for(cfg_, B, T); }
  std::size_t activation_bytes(int B, int T) const override { return activation_bytes_for(cfg_, B, T); }
  // The same, without building a model (whose constructor allocates parameters and gradients), for
  // `teetrain models`. Activation bytes cover the forward arena, the activation-gradient arena and
  // the token buffers; parameters, gradients and optimizer state are 4 bytes x num_params() each.
  static StepFlops flops_for(const Gpt2Config& cfg, int B, int T);
  static std::size_t activation_bytes_for(const Gpt2Config& cfg, int B, int T);

  // The parameter table of `cfg` (names, PyTorch shapes, offsets in forward order) without
  // allocating anything: emulated models and tools use it for paper-scale shapes.
  static std::vector<ParamInfo> param_table(const Gpt2Config& cfg);

  int max_context() const override { return cfg_.context; }
  // CausalLm's (padded columns dropped).
  std::vector<float> forward_logits(const std::vector<int32_t>& tokens, int B, int T) override;

  const Gpt2Config& config() const { return cfg_; }
  // Device logits (B, T, Vp) of the last forward(batch); backward() overwrites them (dlogits).
  const float* logits() const { return v_.logits; }

 private:
  // Device pointers to one layer's parameters (or their gradients) inside a flat buffer.
  struct LayerParams {
    float* ln1w;      // (C)
    float* ln1b;      // (C)
    float* qkvw;      // (3C, C)
    float* qkvb;      // (3C)
    float* attprojw;  // (C, C)
    float* attprojb;  // (C)
    float* ln2w;      // (C)
    float* ln2b;      // (C)
    float* fcw;       // (4C, C)
    float* fcb;       // (4C)
    float* fcprojw;   // (C, 4C)
    float* fcprojb;   // (C)
  };
  // Device pointers to one layer's saved activations inside the activation arena.
  struct LayerActs {
    float* ln1;       // (B, T, C)
    float* ln1_mean;  // (B, T)
    float* ln1_rstd;  // (B, T)
    float* qkv;       // (B, T, 3C)
    float* atty;      // (B, T, C)   attention output before c_proj
    float* att;       // (B, NH, T, T) softmax probabilities
    float* res2;      // (B, T, C)   residual after attention
    float* ln2;       // (B, T, C)
    float* ln2_mean;  // (B, T)
    float* ln2_rstd;  // (B, T)
    float* fch;       // (B, T, 4C)  c_fc output (GELU input)
    float* fch_gelu;  // (B, T, 4C)
    float* res3;      // (B, T, C)   residual after MLP = input of the next layer
  };
  // Every view into the activation arenas for a B x T batch. carve() is the single place that lays
  // the arenas out, so reserve() and activation_bytes() cannot disagree.
  // The gradient arena (TransformerGrads): dbtc holds dlnf, dln2, datty, dln1 in turn; dbt4c_a
  // dfch_gelu, then dqkv (B, T, 3C); dbt4c_b dfch.
  struct Views : TransformerGrads {
    float* encoded = nullptr;       // (B, T, C)  wte[tokens] + wpe = input of layer 0
    float* scratch = nullptr;       // (B, T, C)  c_proj outputs before the residual add (not saved)
    std::vector<LayerActs> layers;  // (n_layer)
    float* lnf = nullptr;           // (B, T, C)
    float* lnf_mean = nullptr;      // (B, T)
    float* lnf_rstd = nullptr;      // (B, T)
    float* logits = nullptr;        // (B, T, Vp) also reused as dlogits in backward
    float* probs = nullptr;         // (B, T, Vp)
    float* losses = nullptr;        // (B, T)
    std::size_t acts_floats = 0;    // size of the forward activation arena
  };
  // With null bases only the sizes are meaningful.
  int context() const override { return cfg_.context; }
  std::pair<std::size_t, std::size_t> arena_floats(int B, int T) const override;
  void carve_views() override;
  static Views carve(const Gpt2Config& cfg, float* acts, float* dacts, int B, int T);
  LayerParams layer_params(float* base, int l) const;

  void forward_trunk(int B, int T);  // tokens on device -> lnf (B, T, C)

  Gpt2Config cfg_;
  std::size_t layer_offset0_ = 0;  // offset of h.0.ln_1.weight
  std::size_t layer_stride_ = 0;   // floats per transformer block
  std::size_t lnf_offset_ = 0;     // offset of ln_f.weight

  Views v_;  // carved over the arenas (TokenModel) for res_B_ x res_T_

  // Shape of the last forward(batch); backward() needs it and refuses without one.
  int cur_B_ = 0;
  int cur_T_ = 0;
};

}  // namespace tt
