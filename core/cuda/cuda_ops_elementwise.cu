// CUDA backend: fill, add/accumulate/scale, the host-returning reductions (sum_squares, mean), GELU,
// ReLU and the optimizer updates. All grid-stride loops over flat buffers; coalesced by construction.
#include <cmath>

#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"

namespace tt::cuda {

namespace {

__global__ void fill_kernel(float* x, float value, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) x[i] = value;
}

// No __restrict__: out may equal a (in-place residual add).
__global__ void add_kernel(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) out[i] = a[i] + b[i];
}

__global__ void accumulate_kernel(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) dst[i] += src[i];
}

__global__ void scale_kernel(float* x, float alpha, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) x[i] *= alpha;
}

// ---- deterministic sum to the host --------------------------------------------------------------
// Stage 1: kReduceBlocks (or fewer, depending on n only) blocks each reduce a grid-stride slice in
// double; stage 2: one block sums the partials in a fixed tree. The launch shape depends only on n.

constexpr int kReduceThreads = 256;
constexpr unsigned kReduceBlocks = 1024;  // == stage-2 block size

__global__ void reduce_partials_kernel(double* partial, const float* x, std::size_t n, bool squares) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const double v = static_cast<double>(x[i]);
    acc += squares ? v * v : v;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void reduce_final_kernel(double* result, const double* partial, unsigned count) {
  __shared__ double shared[32];
  const double v = threadIdx.x < count ? partial[threadIdx.x] : 0.0;
  const double total = block_sum(v, shared);
  if (threadIdx.x == 0) *result = total;
}

// ---- GELU, ReLU ---------------------------------------------------------------------------------

constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

__global__ void gelu_forward_kernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kGeluS * (x + kGeluA * x * x * x)));
  }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const float x = inp[i];
    const float th = tanhf(kGeluS * (x + kGeluA * x * x * x));
    // d/dx [0.5 x (1 + tanh(u))] = 0.5 (1 + tanh u) + 0.5 x sech^2(u) u', sech^2 = 1 - tanh^2.
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluS * (1.0f + 3.0f * kGeluA * x * x);
    dinp[i] += local * dout[i];
  }
}

__global__ void relu_forward_kernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

__global__ void relu_backward_kernel(float* dinp, const float* x, const float* dout, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) dinp[i] += x[i] > 0.0f ? dout[i] : 0.0f;
}

// ---- optimizers (same arithmetic, in the same order, as cpu_ops_optim.cpp) -------------------------

struct AdamWScalars {
  float b1, b2, one_minus_b1, one_minus_b2, eps, step_size, bc2_sqrt, decay, grad_scale;
};

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, std::size_t n,
                             AdamWScalars s) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const float g = grads[i] * s.grad_scale;
    const float mi = s.b1 * m[i] + s.one_minus_b1 * g;
    const float vi = s.b2 * v[i] + s.one_minus_b2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) / s.bc2_sqrt + s.eps;
    params[i] = params[i] * s.decay - s.step_size * (mi / denom);
  }
}

__global__ void sgd_kernel(float* params, const float* grads, float* buf, std::size_t n, float lr, float mom,
                           float wd, float grad_scale) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const float g = grads[i] * grad_scale + wd * params[i];
    const float b = mom * buf[i] + g;
    buf[i] = b;
    params[i] -= lr * b;
  }
}

}  // namespace

void CudaBackend::fill(float* x, float value, std::size_t n) {
  if (n == 0) return;
  use_device();
  fill_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, value, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::add(float* out, const float* a, const float* b, std::size_t n) {
  if (n == 0) return;
  use_device();
  add_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, a, b, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::accumulate(float* dst, const float* src, std::size_t n) {
  if (n == 0) return;
  use_device();
  accumulate_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dst, src, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::scale(float* x, float alpha, std::size_t n) {
  if (n == 0) return;
  use_device();
  scale_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, alpha, n);
  TT_CUDA_CHECK_LAUNCH();
}

double CudaBackend::reduce_to_host(const float* x, std::size_t n, bool squares) {
  if (n == 0) return 0.0;
  // At least 8 elements per thread before adding blocks; at most kReduceBlocks partials.
  const std::size_t per_block = static_cast<std::size_t>(kReduceThreads) * 8;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((n + per_block - 1) / per_block, kReduceBlocks));
  double* partial = reduce_scratch_.get<double>(kReduceBlocks + 1, stream());  // (blocks) + result
  double* result = partial + kReduceBlocks;
  reduce_partials_kernel<<<blocks, kReduceThreads, 0, stream()>>>(partial, x, n, squares);
  TT_CUDA_CHECK_LAUNCH();
  reduce_final_kernel<<<1, kReduceBlocks, 0, stream()>>>(result, partial, blocks);
  TT_CUDA_CHECK_LAUNCH();
  double host = 0.0;
  TT_CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof(double), cudaMemcpyDeviceToHost, stream()));
  TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return host;
}

double CudaBackend::sum_squares(const float* x, std::size_t n) {
  return reduce_to_host(x, n, true);
}

double CudaBackend::mean(const float* x, std::size_t n) {
  if (n == 0) return 0.0;
  return reduce_to_host(x, n, false) / static_cast<double>(n);
}

void CudaBackend::gelu_forward(float* out, const float* inp, std::size_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dinp, inp, dout, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::relu_forward(float* out, const float* inp, std::size_t n) {
  if (n == 0) return;
  relu_forward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::relu_backward(float* dinp, const float* x, const float* dout, std::size_t n) {
  if (n == 0) return;
  relu_backward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dinp, x, dout, n);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                               const AdamWConfig& cfg, float grad_scale, long step) {
  if (n == 0) return;
  // Scalars in double on the host, rounded once, exactly as CpuBackend::adamw_update.
  const double t = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(static_cast<double>(cfg.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(cfg.beta2), t);
  AdamWScalars s{};
  s.b1 = cfg.beta1;
  s.b2 = cfg.beta2;
  s.one_minus_b1 = static_cast<float>(1.0 - static_cast<double>(cfg.beta1));
  s.one_minus_b2 = static_cast<float>(1.0 - static_cast<double>(cfg.beta2));
  s.eps = cfg.eps;
  s.step_size = static_cast<float>(static_cast<double>(cfg.lr) / bc1);
  s.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  s.decay = 1.0f - cfg.lr * cfg.weight_decay;
  s.grad_scale = grad_scale;
  adamw_kernel<<<grid_for(n), kThreads, 0, stream()>>>(params, grads, m, v, n, s);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::sgd_update(float* params, const float* grads, float* momentum_buf, std::size_t n,
                             const SgdConfig& cfg, float grad_scale) {
  if (n == 0) return;
  sgd_kernel<<<grid_for(n), kThreads, 0, stream()>>>(params, grads, momentum_buf, n, cfg.lr, cfg.momentum,
                                                     cfg.weight_decay, grad_scale);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
