// TokenModel: what the token models (GPT-2, BERT) share: a name, a table of named parameter tensors in
// forward order, one flat device buffer each for the parameters and their gradients, and activation
// arenas grown to the largest (B, T) batch seen (a smaller batch uses a prefix of every view, since
// each view is contiguous in its leading (B, T) dimensions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/model.h"

namespace tt {

// FLOPs of one transformer block's forward over a B x T batch of width C, 2 per multiply-add: its four
// matmuls (12 C^2 per token) and attention's Q K^T and att V over the full T x T (as llm.c and the PaLM
// appendix count; not halved for a causal mask).
inline double transformer_block_flops(int B, int T, int C) {
  const double N = static_cast<double>(B) * T;
  const double c = C;
  return 2.0 * N * 12.0 * c * c + 2.0 * 2.0 * N * T * c;
}

// Refuses a batch's ids before they reach the device, where an out-of-range id would index past the
// embedding: `v` must hold n ids in [0, V). InputError "<family>: <what> ..." otherwise.
void check_token_ids(const std::vector<int32_t>& v, std::size_t n, int V, const std::string& family,
                     const char* what);

// The activation-gradient arena of a transformer's backward: one set of buffers reused by every block
// in turn (backward visits one block at a time). Each family's backward says which gradient each
// buffer holds when. A family's Views derive from it.
struct TransformerGrads {
  float* dresidual = nullptr;    // (B, T, C)  gradient of the residual stream
  float* dbtc = nullptr;         // (B, T, C)
  float* dbt4c_a = nullptr;      // (B, T, 4C), or (B, T, wide)
  float* dbt4c_b = nullptr;      // (B, T, 4C), or (B, T, wide)
  float* datt = nullptr;         // (B, NH, T, T) attention backward workspace
  std::size_t dacts_floats = 0;  // size of the activation-gradient arena
  // Carved from `dacts` (null: sizes only) for N = B*T rows of width C; att = B*NH*T*T.
  static TransformerGrads carve(float* dacts, std::size_t N, std::size_t C, std::size_t att);
  // The same with the two wide buffers (N, wide) instead of (N, 4C), for a family whose widest
  // activation is another width (Llama: its stacked gate and up projections, or its qkv rows).
  static TransformerGrads carve(float* dacts, std::size_t N, std::size_t C, std::size_t att,
                                std::size_t wide);
};

// Bytes of a token model's arenas for a B x T batch: the two float arenas and the (B, T) token and
// target ids that reserve() allocates beside them.
inline std::size_t token_arena_bytes(std::size_t acts_floats, std::size_t dacts_floats, int B, int T) {
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  return (acts_floats + dacts_floats) * sizeof(float) + 2 * N * sizeof(int32_t);
}

// A model that continues text (GPT-2, Llama): `teetrain sample` asks it for the next token's logits.
class CausalLm {
 public:
  virtual ~CausalLm() = default;
  virtual int max_context() const = 0;  // the longest window forward_logits takes
  // Forward without targets; returns the logits at the last position of each row, (B, V) on the host.
  // tokens is (B, T). Invalidates the state kept for backward().
  virtual std::vector<float> forward_logits(const std::vector<int32_t>& tokens, int B, int T) = 0;
};

class TokenModel : public Model {
 public:
  std::string name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return params_; }
  std::size_t num_params() const override { return num_params_; }
  float* param_data() override { return params_buf_.as<float>(); }
  float* grad_data() override { return grads_buf_.as<float>(); }
  void place_grads(std::span<float> memory) override { grads_buf_.move_into(std::as_writable_bytes(memory)); }
  void zero_grad() override;
  void set_unit_gate(UnitGate* gate) override { gate_ = gate; }
  // Validates a B x T batch against the context (InputError naming the family) and grows the arenas to
  // hold it; when they grow, the family carves its views again and any saved forward is gone.
  void reserve(int B, int T) final;
  // The tensor named `name`; InputError naming the family when there is none.
  const ParamInfo& param(const std::string& name) const;

 protected:
  // Takes the table (forward order, offsets from 0) and allocates zeroed buffers; RunError when the
  // table's size is not `expected_floats` (the family's own count).
  TokenModel(Backend& backend, std::string family, std::string name, std::vector<ParamInfo> table,
             std::size_t expected_floats);

  // The family's part of reserve(): its context (the longest T), the floats of its forward-activation
  // and activation-gradient arenas for a B x T batch, and carving its views over acts_buf_ and
  // dacts_buf_ for res_B_ x res_T_.
  virtual int context() const = 0;
  virtual std::pair<std::size_t, std::size_t> arena_floats(int B, int T) const = 0;
  virtual void carve_views() = 0;

  // forward_logits' last step: gathers the last position of each row of `hidden` (B, T, C) into `scratch`
  // (B, C), runs the lm head `head` (Vp, C) on those B rows (not B*T) into `logits` (B, Vp), and returns
  // them on the host with the padded columns dropped, (B, V).
  std::vector<float> last_position_logits(const float* hidden, float* scratch, float* logits,
                                          const float* head, int B, int T, int C, int V, int Vp);
  // One transformer block per unit: n blocks of `stride` floats from `first` (Note [Parameter units]).
  static std::vector<ParamUnit> block_units(std::size_t first, std::size_t stride, int n);
  // Brackets one use of a unit's parameters: the gate's before() now, after() at the end of the scope.
  class UnitUse {
   public:
    UnitUse(UnitGate* gate, int unit, UnitPass pass)
        : gate_(gate), unit_(static_cast<std::size_t>(unit)), pass_(pass) {
      if (gate_ != nullptr) gate_->before(unit_, pass_);
    }
    ~UnitUse() {
      if (gate_ != nullptr) gate_->after(unit_, pass_);
    }
    UnitUse(const UnitUse&) = delete;
    UnitUse& operator=(const UnitUse&) = delete;

   private:
    UnitGate* gate_;
    std::size_t unit_;
    UnitPass pass_;
  };

  Backend& backend_;
  std::string family_;  // "gpt2", "bert": prefixes messages
  std::string name_;
  std::vector<ParamInfo> params_;
  std::size_t num_params_ = 0;
  DeviceBuffer params_buf_;  // (num_params)
  DeviceBuffer grads_buf_;   // (num_params)

  int res_B_ = 0;  // the shape the arenas hold
  int res_T_ = 0;
  DeviceBuffer acts_buf_;
  DeviceBuffer dacts_buf_;
  DeviceBuffer tokens_buf_;
  int32_t* tokens_ = nullptr;   // (B, T)
  int32_t* targets_ = nullptr;  // (B, T)
  bool have_forward_ = false;   // the arenas hold a forward(batch) that backward() may use
  UnitGate* gate_ = nullptr;    // Note [Parameter units]; null: every parameter is always present
};

}  // namespace tt
