// The interface through which the trainer sees a model. Concrete models (models/gpt2,
// models/resnet) implement it; the trainer never names one, the CLI wires names to factories.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"

namespace tt {

// One named parameter tensor inside the flat parameter buffer.
struct ParamInfo {
  std::string name;            // e.g. "h.3.attn.c_attn.weight"
  std::vector<int64_t> shape;  // PyTorch shape
  std::size_t offset = 0;      // in floats, into the flat parameter (and gradient) buffer
  std::size_t numel = 0;
  bool decay = false;  // receives weight decay (matrices yes; biases, norms no)
};

// A batch on the host, ready to be copied into the model's device buffers.
// Token models use tokens/targets (B*T each); image models use images (B*C*H*W) and labels (B).
struct Batch {
  int B = 0;
  int T = 0;
  std::vector<int32_t> tokens;   // (B, T)
  std::vector<int32_t> targets;  // (B, T) for tokens; (B) class labels for images
  std::vector<float> images;     // (B, C, H, W)
};

// Called during backward with `from`: gradients of floats [from, num_params) are now final.
// Parameters are laid out in forward order, so backward moves `from` down monotonically and the
// DDP reducer can launch buckets (contiguous slices, highest offsets first) as they complete.
using GradReadyFn = std::function<void(std::size_t from)>;

// Note [Parameter units]: a model that runs in blocks (GPT-2's and Llama's transformer blocks) names
// each block's slice of the flat parameter buffer, a unit, and brackets every use of a unit's
// parameters in forward and backward with its gate's before() and after(). ZeRO-3 (--shard params,
// engine/gradients/ddp_reducer.h) is that gate: before() makes sure the unit's parameters are present
// (all-gathered), after() may release them. Everything outside the units (embeddings, final norm,
// head) is used at both ends of a step and stays present. Without a gate (one rank, DDP, validation,
// sampling) nothing happens.
struct ParamUnit {
  std::size_t begin = 0;  // floats into the flat parameter buffer
  std::size_t end = 0;
};
enum class UnitPass { Forward, Backward };
class UnitGate {
 public:
  virtual ~UnitGate() = default;
  virtual void before(std::size_t unit, UnitPass pass) = 0;  // returns once the unit's parameters are present
  virtual void after(std::size_t unit, UnitPass pass) = 0;   // this pass is done with them
};

// Result of Model::evaluate() on one batch: sums (not means), so batches and ranks combine exactly.
struct EvalResult {
  int count = 0;          // loss terms: images (classifiers) or tokens (language models)
  int correct = -1;       // correct argmax predictions; -1 where accuracy does not apply
  double loss_sum = 0.0;  // summed loss over the count terms
};

struct StepFlops {
  double forward = 0;   // FLOPs of one forward pass on the batch shape
  double backward = 0;  // FLOPs of one backward pass
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string name() const = 0;  // preset or description, e.g. "gpt2-mini"
  virtual const std::vector<ParamInfo>& params() const = 0;
  virtual std::size_t num_params() const = 0;
  virtual float* param_data() = 0;  // device, (num_params)
  virtual float* grad_data() = 0;   // device, (num_params)
  // Moves the gradient arena into `memory`, (num_params) floats or more that the caller owns and keeps
  // alive while the model's gradients are used, contents kept (DeviceBuffer::move_into): a host
  // backend's gradients in a buffer the ranks share (Note [Shared buffers], comm/transport/shm_transport.h).
  virtual void place_grads(std::span<float> memory) = 0;

  // Fills parameters from `seed` (deterministic, independent of thread count).
  virtual void init_params(uint64_t seed) = 0;
  // Allocates activations for batches of at most B x T (idempotent for the same or smaller shape).
  virtual void reserve(int B, int T) = 0;
  // Runs forward on the batch and returns the mean loss over the batch (synchronizes).
  virtual float forward(const Batch& batch) = 0;
  // Backward of the last forward; ACCUMULATES into grad_data() (call zero_grad() per step).
  // on_ready may be empty.
  virtual void backward(const GradReadyFn& on_ready) = 0;
  virtual void zero_grad() = 0;

  // The units in forward order and the gate their uses report to (Note [Parameter units]); a model
  // without units keeps the defaults.
  virtual std::vector<ParamUnit> param_units() const { return {}; }
  virtual void set_unit_gate(UnitGate* /*gate*/) {}

  virtual StepFlops flops(int B, int T) const = 0;
  // Bytes of activation memory for a batch of B x T (for `teetrain models`).
  virtual std::size_t activation_bytes(int B, int T) const = 0;

  // Training vs evaluation mode (batch norm: batch or running statistics). Models whose forward
  // does not depend on the mode (GPT-2: no dropout) keep the no-op default.
  virtual void set_training(bool /*training*/) {}
  // Non-parameter state that checkpoints must keep (batch-norm running statistics): a table of
  // named tensors with offsets into state_data(), (num_state_floats) floats on the device. It is
  // never reduced across ranks and has no gradient. Default: none.
  virtual std::vector<ParamInfo> state_buffers() const { return {}; }
  virtual float* state_data() { return nullptr; }
  virtual std::size_t num_state_floats() const { return 0; }
  // Forward in the current mode with labels. Default (no accuracy): the mean loss of forward()
  // times its B*T terms, which recovers the mean exactly when divided back.
  virtual EvalResult evaluate(const Batch& batch) {
    const float mean = forward(batch);
    EvalResult r;
    r.count = batch.B * (batch.T > 0 ? batch.T : 1);
    r.loss_sum = static_cast<double>(mean) * r.count;
    return r;
  }
};

}  // namespace tt
