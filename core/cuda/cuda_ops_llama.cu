// CUDA backend: the ops a Llama adds to GPT-2's: RMSNorm, rotary position embeddings and SwiGLU, with
// the arithmetic of cpu_ops_llama.cpp. Grouped-query attention is in cuda_ops_attention.cu. RMSNorm's
// weight gradient sums over rows through the fixed (chunk, column) partition layernorm's uses, so every
// op here is deterministic and free of atomics.
#include <cmath>

#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"

namespace tt::cuda {

namespace {

// ---- RMSNorm (one warp per row) -------------------------------------------------------------------

__global__ void rmsnorm_forward_kernel(float* __restrict__ out, float* __restrict__ rstd,
                                       const float* __restrict__ inp, const float* __restrict__ weight, int N,
                                       int C, float eps) {
  const int lane = threadIdx.x & 31;
  const int n = static_cast<int>(blockIdx.x) * (kThreads / 32) + static_cast<int>(threadIdx.x >> 5);
  if (n >= N) return;                                      // whole warps leave together
  const float* x = inp + static_cast<std::size_t>(n) * C;  // (C)
  float* o = out + static_cast<std::size_t>(n) * C;        // (C)
  double ss = 0.0;                                         // in double, as the CPU backend
  for (int c = lane; c < C; c += 32) ss += static_cast<double>(x[c]) * x[c];
  ss = warp_sum(ss);
  const auto rs = static_cast<float>(1.0 / sqrt(ss / C + static_cast<double>(eps)));
  // Backward recomputes norm = x * rs from the saved float rstd, so use exactly that here.
  for (int c = lane; c < C; c += 32) o[c] = x[c] * rs * weight[c];
  if (lane == 0 && rstd != nullptr) rstd[n] = rs;
}

// dinp (N, C) += rstd * (dnorm - norm * mean_c(dnorm * norm)), norm = x * rstd, dnorm = weight * dout.
__global__ void rmsnorm_backward_dinp_kernel(float* dinp, const float* __restrict__ dout,
                                             const float* __restrict__ inp, const float* __restrict__ weight,
                                             const float* __restrict__ rstd, int N, int C) {
  const int lane = threadIdx.x & 31;
  const int n = static_cast<int>(blockIdx.x) * (kThreads / 32) + static_cast<int>(threadIdx.x >> 5);
  if (n >= N) return;
  const std::size_t off = static_cast<std::size_t>(n) * C;
  const float* x = inp + off;   // (C)
  const float* g = dout + off;  // (C)
  float* d = dinp + off;        // (C)
  const float rs = rstd[n];
  double dot = 0.0;
  for (int c = lane; c < C; c += 32) dot += static_cast<double>(weight[c] * g[c]) * (x[c] * rs);
  const auto b = static_cast<float>(warp_sum(dot) / C);
  for (int c = lane; c < C; c += 32) d[c] += (weight[c] * g[c] - x[c] * rs * b) * rs;
}

// pw (chunks, C) = sum over each chunk's rows of norm * dout, rows in order (layernorm's partition).
__global__ void rmsnorm_weight_partial_kernel(double* __restrict__ pw, const float* __restrict__ dout,
                                              const float* __restrict__ inp, const float* __restrict__ rstd,
                                              int N, int C, int rows) {
  const int chunks = (N + rows - 1) / rows;
  const std::size_t total = static_cast<std::size_t>(chunks) * C;
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const auto k = static_cast<int>(i / C);
    const auto c = static_cast<int>(i % C);
    const int r1 = min(N, (k + 1) * rows);
    double acc = 0.0;
    for (int r = k * rows; r < r1; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * C + c;
      acc += static_cast<double>(inp[at] * rstd[r] * dout[at]);
    }
    pw[i] = acc;
  }
}

// ---- rotary position embeddings -------------------------------------------------------------------

// One thread per pair (i, i + HS/2) of one head of one row of x (B*T, row_floats); row bt is at position
// t = bt % T. The angle t * base^(-2i/HS) is formed in double and its cos and sin rounded to float, as the
// CPU backend's table does, so that long contexts keep their precision. sign -1 turns backwards.
__global__ void rope_kernel(float* x, std::size_t pairs, int T, int row_floats, int heads, int HS, float base,
                            float sign) {
  const int half = HS / 2;
  for (std::size_t p = global_index(); p < pairs; p += global_stride()) {
    const auto i = static_cast<int>(p % half);
    const std::size_t rest = p / half;
    const auto h = static_cast<int>(rest % heads);
    const std::size_t bt = rest / heads;
    const auto t = static_cast<double>(bt % T);
    const double angle = t * pow(static_cast<double>(base), -2.0 * i / HS);
    const auto c = static_cast<float>(cos(angle));
    const float s = sign * static_cast<float>(sin(angle));
    float* lo = x + bt * row_floats + static_cast<std::size_t>(h) * HS + i;
    float* hi = lo + half;
    const float a = *lo;
    const float b = *hi;
    *lo = a * c - b * s;
    *hi = b * c + a * s;
  }
}

// ---- SwiGLU (same formulas as cpu::swiglu_span and swiglu_backward_span) ---------------------------

// out (N, F) = silu(gate) * up; inp (N, 2F) rows hold gate (F) then up (F).
__global__ void swiglu_forward_kernel(float* __restrict__ out, const float* __restrict__ inp, std::size_t n,
                                      int F) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const std::size_t at = (i / F) * 2 * F + i % F;  // gate's index in inp; up is F further
    const float g = inp[at];
    out[i] = g / (1.0f + expf(-g)) * inp[at + F];
  }
}

// dgate += dout * up * silu'(gate), dup += dout * silu(gate); silu'(g) = s (1 + g (1 - s)), s = sigmoid(g).
__global__ void swiglu_backward_kernel(float* dinp, const float* __restrict__ inp,
                                       const float* __restrict__ dout, std::size_t n, int F) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    const std::size_t at = (i / F) * 2 * F + i % F;
    const float g = inp[at];
    const float s = 1.0f / (1.0f + expf(-g));
    dinp[at] += dout[i] * inp[at + F] * s * (1.0f + g * (1.0f - s));
    dinp[at + F] += dout[i] * g * s;
  }
}

}  // namespace

// ---- RMSNorm --------------------------------------------------------------------------------------

void CudaBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N,
                                  int C, float eps) {
  if (N == 0) return;
  rmsnorm_forward_kernel<<<grid_for_warps(N), kThreads, 0, stream()>>>(out, rstd, inp, weight, N, C, eps);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                   const float* weight, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  if (dinp != nullptr) {
    rmsnorm_backward_dinp_kernel<<<grid_for_warps(N), kThreads, 0, stream()>>>(dinp, dout, inp, weight, rstd,
                                                                               N, C);
    TT_CUDA_CHECK_LAUNCH();
  }
  if (dweight == nullptr) return;
  const int rows = rows_per_chunk(N);
  const int chunks = (N + rows - 1) / rows;
  const std::size_t per = static_cast<std::size_t>(chunks) * C;
  double* pw = colsum_scratch_.get<double>(per, stream());  // (chunks, C)
  rmsnorm_weight_partial_kernel<<<grid_for(per), kThreads, 0, stream()>>>(pw, dout, inp, rstd, N, C, rows);
  TT_CUDA_CHECK_LAUNCH();
  chunk_sums_add(dweight, pw, chunks, C);
}

// ---- rotary position embeddings -------------------------------------------------------------------

void CudaBackend::rope_forward(float* x, int B, int T, int row_floats, int heads, int HS, float base) {
  const std::size_t pairs = static_cast<std::size_t>(B) * T * heads * (HS / 2);
  if (pairs == 0) return;
  rope_kernel<<<grid_for(pairs), kThreads, 0, stream()>>>(x, pairs, T, row_floats, heads, HS, base, 1.0f);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::rope_backward(float* dx, int B, int T, int row_floats, int heads, int HS, float base) {
  const std::size_t pairs = static_cast<std::size_t>(B) * T * heads * (HS / 2);
  if (pairs == 0) return;
  rope_kernel<<<grid_for(pairs), kThreads, 0, stream()>>>(dx, pairs, T, row_floats, heads, HS, base, -1.0f);
  TT_CUDA_CHECK_LAUNCH();
}

// ---- SwiGLU ---------------------------------------------------------------------------------------

void CudaBackend::swiglu_forward(float* out, const float* inp, int N, int F) {
  const std::size_t n = static_cast<std::size_t>(N) * F;
  if (n == 0) return;
  swiglu_forward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, n, F);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
  const std::size_t n = static_cast<std::size_t>(N) * F;
  if (n == 0) return;
  swiglu_backward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dinp, inp, dout, n, F);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
