// The CUDA backend: every tt::Backend op, asynchronous on one non-blocking stream owned by the backend.
//
// Matmul-shaped work goes to cuBLAS (linear layers, and the per-head products of attention as strided
// batched gemms), convolutions to cuDNN with deterministic algorithms only, everything else to our own
// kernels. Reductions whose results the caller keeps (dbias, layernorm/RMSNorm/batchnorm parameter gradients,
// encoder dwte/dwpe, sum_squares, mean) use a fixed partition and a fixed order and never atomics, so
// repeated runs on the same GPU are bit-identical. Op groups live in separate files, as in cpu/:
//   cuda_backend.cpp          construction, description, memory, copies
//   cuda_ops_elementwise.cu   fill, add/accumulate/scale, sum_squares/mean, GELU, ReLU, AdamW, SGD
//   cuda_ops_transformer.cu   encoder, layernorm, matmul, softmax-cross-entropy
//   cuda_ops_attention.cu     self-attention, multi-head or grouped-query, causal or bidirectional
//   cuda_ops_llama.cu         RMSNorm, rotary position embeddings, SwiGLU
//   cuda_ops_conv.cu          conv2d (cuDNN)
//   cuda_ops_cnn_norm.cu      batch norm, pooling, global average pooling
//
// Threads: copy_to_device, copy_to_host, fill, add, accumulate and scale may run on another thread
// (the DDP communication thread) while this one enqueues ops. They touch nothing but the stream (CUDA
// calls are thread-safe); every other op uses scratch buffers or caches and belongs to the owning
// thread only.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/cuda/device_memory.h"
#include "core/backend.h"

namespace tt::cuda {

// unique_ptr deleter that calls a C destroy function and ignores its status (destructors cannot throw).
template <typename T, auto Destroy>
struct Destroyer {
  void operator()(T* p) const noexcept { static_cast<void>(Destroy(p)); }
};

using StreamPtr = std::unique_ptr<CUstream_st, Destroyer<CUstream_st, &cudaStreamDestroy>>;
using CublasPtr = std::unique_ptr<cublasContext, Destroyer<cublasContext, &cublasDestroy>>;
using CudnnPtr = std::unique_ptr<cudnnContext, Destroyer<cudnnContext, &cudnnDestroy>>;
using TensorDescPtr =
    std::unique_ptr<cudnnTensorStruct, Destroyer<cudnnTensorStruct, &cudnnDestroyTensorDescriptor>>;
using FilterDescPtr =
    std::unique_ptr<cudnnFilterStruct, Destroyer<cudnnFilterStruct, &cudnnDestroyFilterDescriptor>>;
using ConvDescPtr = std::unique_ptr<cudnnConvolutionStruct,
                                    Destroyer<cudnnConvolutionStruct, &cudnnDestroyConvolutionDescriptor>>;

// A grow-only device scratch buffer owned by the backend (attention permutes, partial sums, sort
// buffers, the cuDNN workspace). Contents are undefined on every get().
class Scratch {
 public:
  // At least `bytes` of device memory. Growing first waits for `stream`: kernels queued earlier may
  // still use the old buffer.
  void* get(std::size_t bytes, cudaStream_t stream);
  template <typename T>
  T* get(std::size_t count, cudaStream_t stream) {
    return static_cast<T*>(get(count * sizeof(T), stream));
  }

 private:
  DeviceBytes memory_;
};

// cuDNN descriptors and the chosen algorithms for one convolution shape, built on first use.
// Each direction keeps its deterministic candidates in order of preference (precise GEMM-based
// algorithms first) and advances past one that cuDNN reports as unsupported at execution time.
struct ConvPlan {
  TensorDescPtr x, y;  // x (B, IC, H, W), y (B, OC, OH, OW)
  FilterDescPtr w;     // (OC, IC, KH, KW)
  ConvDescPtr conv;
  std::vector<std::pair<cudnnConvolutionFwdAlgo_t, std::size_t>> fwd;  // (algorithm, workspace bytes)
  std::vector<std::pair<cudnnConvolutionBwdDataAlgo_t, std::size_t>> bwd_data;
  std::vector<std::pair<cudnnConvolutionBwdFilterAlgo_t, std::size_t>> bwd_filter;
  std::size_t fwd_at = 0, bwd_data_at = 0, bwd_filter_at = 0;  // current candidate of each direction
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device_ordinal, bool tf32);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string describe() const override { return description_; }
  std::string numerics() const override { return numerics_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill(float* x, float value, std::size_t n) override;
  void synchronize() override;

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
  cudaStream_t stream() const { return stream_.get(); }
  // The current device is per host thread: ops that another thread may call (the host copies, and
  // fill/add/accumulate/scale, which a reducer might use on received data) make it ours first.
  void use_device() const;

  // Column-major cuBLAS gemm / strided batched gemm in FP32 storage with the backend's compute type
  // (FP32, or TF32 tensor cores when enabled). Callers translate row-major shapes (see the op files).
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float* A,
            int lda, const float* B, int ldb, float beta, float* C, int ldc);
  void gemm_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const float* A, int lda, long long stride_a, const float* B, int ldb, long long stride_b,
                    float beta, float* C, int ldc, long long stride_c, int batch);
  // dst (C) += sum over rows of src (N, C), deterministic two-stage column sum.
  void column_sums_add(float* dst, const float* src, int N, int C);
  // dst (C) += sum over chunks of partial (chunks, C), chunks in order: column sums' second stage.
  void chunk_sums_add(float* dst, const double* partial, int chunks, int C);
  // sum over i < n of x[i] (squared when `squares`) in double, deterministic; synchronizes.
  double reduce_to_host(const float* x, std::size_t n, bool squares);
  ConvPlan& conv_plan(const Conv2dShape& s);
  // cuDNN is created on the first convolution: transformer-only runs never load its sub-libraries.
  cudnnHandle_t cudnn();

  int device_;
  bool tf32_;
  cublasComputeType_t compute_type_;
  std::string description_;
  std::string numerics_;  // description_ without the device ordinal and memory size
  // Declaration order is destruction order reversed: buffers and plans go first, then the library
  // handles, then the stream they were bound to.
  StreamPtr stream_;
  CublasPtr cublas_;
  CudnnPtr cudnn_;
  Scratch reduce_scratch_;  // sum_squares/mean partials and result
  Scratch colsum_scratch_;  // (chunks, C) double partials of column sums
  Scratch sort_scratch_;    // encoder_backward: sorted tokens/positions and CUB temp storage
  Scratch copy_scratch_;    // copy() between overlapping ranges
  Scratch conv_workspace_;  // cuDNN workspace, grown to the largest convolution seen
  std::map<std::array<int, 9>, std::unique_ptr<ConvPlan>> conv_plans_;
};

}  // namespace tt::cuda
