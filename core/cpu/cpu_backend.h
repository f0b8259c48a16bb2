// The CPU backend: the reference implementation of tt::Backend.
//
// Matmul-shaped work (linear layers, and the per-head QK^T / att@V products of attention) goes to
// OpenBLAS sgemm; everything else is an OpenMP loop with the thread count held by the backend
// instance (never a global). Every reduction that produces a value the caller keeps (layernorm
// dweight/dbias, matmul dbias, encoder dwte/dwpe, sum_squares, mean) is computed either as one
// sequential sum per output element (the work is partitioned over output columns, so the thread
// count only decides who computes which column, never the order of additions) or as fixed-size
// chunk partials combined in chunk order. Results are therefore bit-identical run to run and,
// for everything but sgemm, across thread counts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/host_memory.h"
#include "core/backend.h"

namespace tt {

namespace cpu {
class DnnlConv;
}

// Which implementation runs the CPU backend's convolutions (core/cpu/cpu_conv.h).
enum class CpuConv {
  Auto,       // oneDNN when this build has it, except small outputs (cpu_conv.h); else the reference
  Reference,  // im2col + OpenBLAS sgemm (what the tests check oneDNN against)
  Dnnl,       // oneDNN for every shape; RunError at construction in a build without it
};

// Creates the CPU backend. threads >= 1 is used for OpenMP loops, OpenBLAS and oneDNN.
std::unique_ptr<Backend> make_cpu_backend(int threads, CpuConv conv = CpuConv::Auto);

// Declared here (rather than hidden in a .cpp) so the op groups can live in separate files:
// cpu_backend.cpp (memory, elementwise, reductions), cpu_ops_transformer.cpp (encoder, layernorm,
// matmul, GELU, softmax-cross-entropy), cpu_ops_attention.cpp, cpu_ops_llama.cpp (RMSNorm, rotary
// embeddings, SwiGLU), cpu_ops_optim.cpp, cpu_ops_cnn.cpp (convolution, dispatching to
// cpu_conv_dnnl.cpp or cpu_conv_im2col.cpp), cpu_ops_cnn_norm.cpp.
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads, CpuConv conv = CpuConv::Auto);
  ~CpuBackend() override;

  int threads() const { return threads_; }
  // The convolution mode in use: Reference (also Auto in a build without oneDNN), Dnnl or Auto.
  CpuConv conv_impl() const { return conv_; }
  // Whether shape s runs on oneDNN (else im2col + sgemm).
  bool conv_on_dnnl(const Conv2dShape& s) const;
  // oneDNN's implementation names for a conv shape ("" on the reference path), for benchmarks.
  std::string conv_implementations(const Conv2dShape& s) const;

  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string describe() const override;
  std::string numerics() const override;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void discard(float* x, std::size_t n) override { discard_host_bytes(x, n * sizeof(float)); }
  void prefault(float* x, std::size_t n) override { prefault_host_bytes(x, n * sizeof(float)); }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill(float* x, float value, std::size_t n) override;
  void synchronize() override {}

  void add(float* out, const float* a, const float* b, std::size_t n) override;
  void accumulate(float* dst, const float* src, std::size_t n) override;
  void scale(float* x, float alpha, std::size_t n) override;
  double sum_squares(const float* x, std::size_t n) override;
  double mean(const float* x, std::size_t n) override;

  void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                        int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override;
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC,
                      int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int IC, int OC) override;
  void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                         AttentionMask mask) override;
  void attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH, AttentionMask mask) override;
  void add_bias(float* x, const float* bias, int N, int C) override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                        const float* rstd, int N, int C) override;
  void rope_forward(float* x, int B, int T, int row_floats, int heads, int HS, float base) override;
  void rope_backward(float* dx, int B, int T, int row_floats, int heads, int HS, float base) override;
  void swiglu_forward(float* out, const float* inp, int N, int F) override;
  void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) override;
  void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int NKV, int HS,
                             AttentionMask mask) override;
  void gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                              const float* att, int B, int T, int NH, int NKV, int HS,
                              AttentionMask mask) override;
  void gelu_forward(float* out, const float* inp, std::size_t n) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override;
  void softmax_xent_forward(float* losses, float* probs, const float* logits, const int32_t* targets, int N,
                            int V, int Vp) override;
  void softmax_xent_backward(float* dlogits, const float* probs, const int32_t* targets, int N, int V, int Vp,
                             float dloss) override;

  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const AdamWConfig& cfg, float grad_scale, long step) override;
  void sgd_update(float* params, const float* grads, float* momentum_buf, std::size_t n, const SgdConfig& cfg,
                  float grad_scale) override;

  // CNN ops: cpu_ops_cnn.cpp (convolution) and cpu_ops_cnn_norm.cpp (batch norm, ReLU, pooling).
  std::size_t conv2d_workspace_floats(const Conv2dShape& s) const override;
  void conv2d_forward(float* out, const float* inp, const float* weight, const float* bias, float* workspace,
                      const Conv2dShape& s) override;
  void conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, float* workspace, const Conv2dShape& s) override;
  void batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean, float* running_var,
                         const float* inp, const float* weight, const float* bias, int B, int C, int HW,
                         float momentum, float eps, bool training) override;
  void batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int B, int C,
                          int HW) override;
  void relu_forward(float* out, const float* inp, std::size_t n) override;
  void relu_backward(float* dinp, const float* x, const float* dout, std::size_t n) override;
  void maxpool2d_forward(float* out, int32_t* argmax, const float* inp, const Pool2dShape& s) override;
  void maxpool2d_backward(float* dinp, const float* dout, const int32_t* argmax,
                          const Pool2dShape& s) override;
  void avgpool2d_forward(float* out, const float* inp, const Pool2dShape& s) override;
  void avgpool2d_backward(float* dinp, const float* dout, const Pool2dShape& s) override;
  void global_avgpool_forward(float* out, const float* inp, int B, int C, int HW) override;
  void global_avgpool_backward(float* dinp, const float* dout, int B, int C, int HW) override;

 private:
  // OpenBLAS keeps its thread count process-wide; re-assert ours before each sgemm so two backend
  // instances with different thread counts (tests do this) each get what they asked for.
  void use_blas_threads() const;

  int threads_;
  CpuConv conv_ = CpuConv::Reference;
  // oneDNN convolutions with their per-shape primitive cache; null on the reference path. Held by
  // pointer so that conv2d_workspace_floats (const) can fill the cache: creating a shape's primitives
  // is what tells how much workspace it needs.
  std::unique_ptr<cpu::DnnlConv> dnnl_;
};

}  // namespace tt
