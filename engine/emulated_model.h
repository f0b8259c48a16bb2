// Emulated GPU compute (`teetrain train --compute emulate --gpu h100`).
//
// Forward and backward are replaced by waits computed from the model's FLOPs and activation bytes
// (a roofline: matmuls at a fraction of the GPU's peak, element-wise work at its memory bandwidth),
// while everything the overhead study is about stays real: the gradient buffer, the buckets, the ring,
// the sealing and the ingress. A small machine can then study the communication and crypto side of
// paper-scale models (gpt2-large) with GPU-like compute/communication ratios.
//
// Why waits and not busy loops: a sleeping compute thread frees its core for the communication and
// crypto threads, exactly as a GPU leaves the host CPU free while it computes.
//
// What is NOT real: the loss (a constant), the parameters (never updated: param_data() aliases the
// gradient buffer, so an EmulatedModel must be paired with an EmulatedOptimizer and must not be
// checkpointed or resumed), and activation memory (none is allocated).
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/buffer.h"
#include "engine/core/model.h"
#include "engine/optimizer.h"

namespace tt {

// Achieved fractions measured with teetrain's own CUDA backend on an H200 (tests/fixtures/
// gpu_size_sweep_h200; the fit is described in gpu_specs()): the matmuls' share of peak, and the HBM
// bytes moved per byte of activations (and their gradients) in one forward — backward moves twice as
// many. The traffic is a property of the kernels: ours run unfused element-wise ops and an attention
// that writes its (B, NH, T, T) matrices.
inline constexpr double kMeasuredMatmulEfficiency = 0.76;
inline constexpr double kMeasuredActTraffic = 5.0;

// Peak dense throughput of one GPU (no structured sparsity), from the vendors' data sheets.
struct GpuSpec {
  std::string name;
  double peak_tflops_fp32 = 0;  // plain FP32 (CUDA cores)
  double peak_tflops_tf32 = 0;  // TF32 tensor cores (FP32 training with TF32 matmuls)
  double peak_tflops_bf16 = 0;  // BF16/FP16 tensor cores (mixed-precision training)
  double hbm_gbps = 0;          // memory bandwidth, GB/s (paces activations and the optimizer)
  double efficiency = kMeasuredMatmulEfficiency;  // achieved fraction of peak in the matmuls
  double act_traffic = kMeasuredActTraffic;       // HBM bytes per activation byte in a forward
  double aead_gbps = 0;    // AES-256-GCM seal throughput of our CUDA kernel (0 = not measured)
  double nvlink_gbps = 0;  // GPU-to-GPU bandwidth per direction, GB/s (paces --link emulate)
};

// The built-in table: h100, h200, a100, v100.
std::vector<GpuSpec> gpu_specs();
// Looks `name` up (case-sensitive); throws InputError listing the known names.
GpuSpec gpu_spec(const std::string& name);

// The GPU an emulated run pretends to have, with the user's overrides applied.
struct EmulatedGpu {
  GpuSpec spec;
  std::string precision = "tf32";    // "fp32", "tf32" or "bf16": which peak column applies
  double tflops_override = 0;        // > 0: replaces the peak (--gpu-tflops)
  double efficiency_override = 0;    // > 0: replaces the efficiency (--gpu-efficiency)
  double aead_override = 0;          // > 0: replaces the AES-GCM rate (--gpu-aead-gbps)
  double act_traffic_override = -1;  // >= 0: replaces act_traffic (--gpu-act-traffic; 0 = FLOPs only)

  // GB/s of the GPU's AES-GCM (device crypto); throws InputError when the table has no measurement.
  double aead_gbps() const;

  // Sustained FLOP/s = peak x efficiency. Throws InputError for an unknown precision or a
  // non-positive result.
  double flops_per_second() const;
  double efficiency() const { return efficiency_override > 0 ? efficiency_override : spec.efficiency; }
  double act_traffic() const { return act_traffic_override >= 0 ? act_traffic_override : spec.act_traffic; }
  // Seconds the element-wise work of one forward takes for `act_bytes` of FP32 activations: their
  // traffic at 80% of HBM bandwidth (streaming kernels), halved for bf16 (2-byte activations).
  double activation_seconds(double act_bytes) const;
  std::string describe() const;  // "h100 tf32 494.7 TFLOP/s x 0.76 + activations x5.0 at 3350 GB/s"
};

// What an EmulatedModel needs to know about the model it stands in for.
struct EmulatedModelConfig {
  std::string name;               // e.g. "gpt2-large"
  std::vector<ParamInfo> params;  // the real model's parameter table (forward order)
  std::size_t num_params = 0;
  std::function<StepFlops(int B, int T)> flops;  // FLOPs of the real model for a B x T batch
  // Bytes of FP32 activations and activation gradients the real model keeps for a B x T batch
  // (Model::activation_bytes); empty: compute is FLOPs alone.
  std::function<double(int B, int T)> activation_bytes;
  EmulatedGpu gpu;
  // Physical bytes behind the gradient buffer. 0: a real buffer of num_params floats, filled with a
  // deterministic pattern. Otherwise (Linux only) the buffer's virtual range is made of repeated
  // mappings of one shared block of this many bytes (rounded to pages), so a 774M-parameter model
  // costs e.g. 64 MiB per rank instead of 3 GiB: the ring and the crypto still touch num_params
  // floats, at the same cost. The aliased buffer holds zeros, because zero is the only value that
  // stays put when aliased copies of one float are summed more than once.
  std::size_t grad_backing_bytes = 0;
  float loss = 10.0f;  // the constant forward() returns
};

// A sensible default for grad_backing_bytes: real buffers up to 1 GiB of gradients, 64 MiB of
// aliased backing above that (paper-scale models on a 24 GiB machine with several ranks).
std::size_t default_grad_backing_bytes(std::size_t num_params);

// Groups of parameters that become final together in backward: consecutive parameters whose names
// share a layer key ("h.3.attn.c_attn.weight" -> "h.3"; a name without a numeric second part is its
// own group). Returned as [begin, end) float ranges in forward order.
struct ParamGroup {
  std::size_t begin = 0;
  std::size_t end = 0;
};
std::vector<ParamGroup> layer_groups(const std::vector<ParamInfo>& params, std::size_t num_params);

class EmulatedModel final : public Model {
 public:
  EmulatedModel(Backend& backend, EmulatedModelConfig cfg);
  ~EmulatedModel() override;
  EmulatedModel(const EmulatedModel&) = delete;
  EmulatedModel& operator=(const EmulatedModel&) = delete;

  std::string name() const override { return cfg_.name; }
  const std::vector<ParamInfo>& params() const override { return cfg_.params; }
  std::size_t num_params() const override { return cfg_.num_params; }
  // Parameters are never updated, so they need no memory of their own: this is the gradient buffer
  // (a digest of it is still deterministic). Do not broadcast or checkpoint it.
  float* param_data() override { return grads_; }
  float* grad_data() override { return grads_; }

  void init_params(uint64_t /*seed*/) override {}
  void reserve(int /*B*/, int /*T*/) override {}
  // Waits forward_seconds() and returns the constant loss.
  float forward(const Batch& batch) override;
  // Walks the layer groups from the last to the first, waiting each group's share of the backward
  // time (proportional to its parameter count) and then calling on_ready(group.begin), as the real
  // model does; the last call is on_ready(0).
  void backward(const GradReadyFn& on_ready) override;
  // Gradients keep their deterministic values across steps (a GPU memset is free; the emulation does
  // not need to pay a host memset of the whole buffer every step).
  void zero_grad() override {}
  StepFlops flops(int B, int T) const override { return cfg_.flops(B, T); }
  std::size_t activation_bytes(int /*B*/, int /*T*/) const override { return 0; }

  // Seconds one forward / backward of a B x T batch is emulated to take: FLOPs / (peak x efficiency)
  // plus activation_seconds(activation bytes), twice that in backward (it reads the activations and
  // writes and reads their gradients). Measured against real CUDA runs in test_emulated_model.
  double forward_seconds(int B, int T) const;
  double backward_seconds(int B, int T) const;
  double activation_seconds(int B, int T) const;  // the forward's element-wise share (0: no bytes given)
  const std::vector<ParamGroup>& groups() const { return groups_; }
  bool grads_aliased() const { return aliased_ != nullptr; }
  std::string describe() const;  // one line for the run banner: says plainly that compute is emulated

 private:
  class AliasedBuffer;
  Backend& backend_;
  EmulatedModelConfig cfg_;
  std::vector<ParamGroup> groups_;
  DeviceBuffer real_;                       // grad_backing_bytes == 0
  std::unique_ptr<AliasedBuffer> aliased_;  // grad_backing_bytes > 0
  float* grads_ = nullptr;
  int last_B_ = 0;
  int last_T_ = 0;
};

// Stands in for the optimizer of an emulated run: waits as long as a fused AdamW kernel takes on the
// GPU (it streams about 28 bytes per parameter: reads p, g, m, v and writes p, m, v in FP32) and
// changes nothing. Holds no state, so emulated runs cannot be checkpointed.
class EmulatedOptimizer final : public Optimizer {
 public:
  EmulatedOptimizer(std::size_t num_params, EmulatedGpu gpu)
      : num_params_(num_params), gpu_(std::move(gpu)) {}
  void step(Model& model, float lr, float grad_scale, long step_index) override;
  float* state_data() override { return nullptr; }
  std::size_t state_floats() const override { return 0; }
  std::string name() const override { return "emulated-adamw"; }
  double step_seconds() const;

 private:
  std::size_t num_params_;
  EmulatedGpu gpu_;
};

}  // namespace tt
