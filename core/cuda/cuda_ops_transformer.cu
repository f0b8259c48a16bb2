// CUDA backend: encoder (token + position embedding), layernorm, matmul (+bias) and
// softmax-cross-entropy. Attention is in cuda_ops_attention.cu.
//
// Row-major shapes map onto column-major cuBLAS by reading each row-major (R, C) matrix as a
// column-major (C, R) one: out (N, OC) = inp (N, IC) @ W (OC, IC)^T becomes out^T = W^T' @ inp^T
// with W read transposed (llm.c does the same).
#include <algorithm>
#include <cmath>
#include <cub/device/device_radix_sort.cuh>

#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"

namespace tt::cuda {

namespace {

constexpr float kLayerNormEps = 1e-5f;

// ---- encoder --------------------------------------------------------------------------------------

__global__ void encoder_forward_kernel(float* __restrict__ out, const int32_t* __restrict__ tokens,
                                       const float* __restrict__ wte, const float* __restrict__ wpe,
                                       std::size_t total, int T, int C) {
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const std::size_t bt = i / C;
    const auto c = static_cast<int>(i % C);
    const std::size_t t = bt % T;
    out[i] = wte[static_cast<std::size_t>(tokens[bt]) * C + c] + (wpe != nullptr ? wpe[t * C + c] : 0.0f);
  }
}

// dwpe (T, C) += sum over b of dout (B, T, C): one thread per (t, c), b in order (as the CPU).
__global__ void encoder_dwpe_kernel(float* __restrict__ dwpe, const float* __restrict__ dout, int B, int T,
                                    int C) {
  const std::size_t TC = static_cast<std::size_t>(T) * C;
  for (std::size_t i = global_index(); i < TC; i += global_stride()) {
    float acc = dwpe[i];
    for (int b = 0; b < B; ++b) acc += dout[static_cast<std::size_t>(b) * TC + i];
    dwpe[i] = acc;
  }
}

__global__ void iota_kernel(int32_t* x, int n) {
  for (std::size_t i = global_index(); i < static_cast<std::size_t>(n); i += global_stride())
    x[i] = static_cast<int32_t>(i);
}

// dwte rows: positions sorted by token (stable, so ascending position within a token). The block
// at the first sorted index of each token owns that dwte row and adds its positions' dout rows in
// position order: the same sequence of float additions as the CPU backend, without atomics.
__global__ void encoder_dwte_kernel(float* __restrict__ dwte, const float* __restrict__ dout,
                                    const int32_t* __restrict__ sorted_tok,
                                    const int32_t* __restrict__ sorted_pos, int N, int C) {
  const int i = static_cast<int>(blockIdx.x);
  const int32_t tok = sorted_tok[i];
  if (i > 0 && sorted_tok[i - 1] == tok) return;          // not the first position of this token
  float* row = dwte + static_cast<std::size_t>(tok) * C;  // (C)
  for (int c = static_cast<int>(threadIdx.x); c < C; c += static_cast<int>(blockDim.x)) {
    float acc = row[c];
    for (int j = i; j < N && sorted_tok[j] == tok; ++j)
      acc += dout[static_cast<std::size_t>(sorted_pos[j]) * C + c];
    row[c] = acc;
  }
}

// ---- layernorm (one warp per row) ----------------------------------------------------------------

__global__ void layernorm_forward_kernel(float* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, const float* __restrict__ inp,
                                         const float* __restrict__ weight, const float* __restrict__ bias,
                                         int N, int C) {
  const int lane = threadIdx.x & 31;
  const int n = static_cast<int>(blockIdx.x) * (kThreads / 32) + static_cast<int>(threadIdx.x >> 5);
  if (n >= N) return;                                      // whole warps leave together
  const float* x = inp + static_cast<std::size_t>(n) * C;  // (C)
  float* o = out + static_cast<std::size_t>(n) * C;        // (C)
  // Two-pass statistics in double, as the CPU backend.
  double s = 0.0;
  for (int c = lane; c < C; c += 32) s += static_cast<double>(x[c]);
  const double m = warp_sum(s) / C;
  double ss = 0.0;
  for (int c = lane; c < C; c += 32) {
    const double d = static_cast<double>(x[c]) - m;
    ss += d * d;
  }
  ss = warp_sum(ss);
  const auto mf = static_cast<float>(m);
  const auto rs = static_cast<float>(1.0 / sqrt(ss / C + static_cast<double>(kLayerNormEps)));
  for (int c = lane; c < C; c += 32) {
    const float v = (x[c] - mf) * rs * weight[c];
    o[c] = bias != nullptr ? v + bias[c] : v;
  }
  if (lane == 0) {
    if (mean != nullptr) mean[n] = mf;
    if (rstd != nullptr) rstd[n] = rs;
  }
}

// dinp (N, C) += rstd * (dnorm - mean_c(dnorm) - norm * mean_c(dnorm * norm)), dnorm = weight * dout.
__global__ void layernorm_backward_dinp_kernel(float* dinp, const float* __restrict__ dout,
                                               const float* __restrict__ inp,
                                               const float* __restrict__ weight,
                                               const float* __restrict__ mean, const float* __restrict__ rstd,
                                               int N, int C) {
  const int lane = threadIdx.x & 31;
  const int n = static_cast<int>(blockIdx.x) * (kThreads / 32) + static_cast<int>(threadIdx.x >> 5);
  if (n >= N) return;
  const std::size_t off = static_cast<std::size_t>(n) * C;
  const float* x = inp + off;   // (C)
  const float* g = dout + off;  // (C)
  float* d = dinp + off;        // (C)
  const float mn = mean[n];
  const float rs = rstd[n];
  double sum_dnorm = 0.0;
  double sum_dnorm_norm = 0.0;
  for (int c = lane; c < C; c += 32) {
    const float norm = (x[c] - mn) * rs;
    const float dnorm = weight[c] * g[c];
    sum_dnorm += static_cast<double>(dnorm);
    sum_dnorm_norm += static_cast<double>(dnorm) * static_cast<double>(norm);
  }
  const auto a = static_cast<float>(warp_sum(sum_dnorm) / C);
  const auto b = static_cast<float>(warp_sum(sum_dnorm_norm) / C);
  for (int c = lane; c < C; c += 32) {
    const float norm = (x[c] - mn) * rs;
    const float dnorm = weight[c] * g[c];
    d[c] += (dnorm - a - norm * b) * rs;
  }
}

// ---- deterministic column sums ---------------------------------------------------------------------
// Rows are cut into chunks whose size depends only on N (rows_per_chunk, cuda_kernels.cuh); stage 1 has
// one thread per (chunk, column) summing its rows in order (coalesced across columns), stage 2 one thread
// per column summing the chunk partials in order.

// partial (chunks, C) = sum over the chunk's rows of src (N, C).
__global__ void colsum_partial_kernel(double* __restrict__ partial, const float* __restrict__ src, int N,
                                      int C, int rows) {
  const int chunks = (N + rows - 1) / rows;
  const std::size_t total = static_cast<std::size_t>(chunks) * C;
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const auto k = static_cast<int>(i / C);
    const auto c = static_cast<int>(i % C);
    const int r1 = min(N, (k + 1) * rows);
    double acc = 0.0;
    for (int r = k * rows; r < r1; ++r) acc += static_cast<double>(src[static_cast<std::size_t>(r) * C + c]);
    partial[i] = acc;
  }
}

// Layernorm parameter gradients: pw (chunks, C) = sum norm * dout, pb (chunks, C) = sum dout.
__global__ void layernorm_param_partial_kernel(double* __restrict__ pw, double* __restrict__ pb,
                                               const float* __restrict__ dout, const float* __restrict__ inp,
                                               const float* __restrict__ mean, const float* __restrict__ rstd,
                                               int N, int C, int rows) {
  const int chunks = (N + rows - 1) / rows;
  const std::size_t total = static_cast<std::size_t>(chunks) * C;
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const auto k = static_cast<int>(i / C);
    const auto c = static_cast<int>(i % C);
    const int r1 = min(N, (k + 1) * rows);
    double accw = 0.0;
    double accb = 0.0;
    for (int r = k * rows; r < r1; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * C + c;
      const float norm = (inp[at] - mean[r]) * rstd[r];
      accw += static_cast<double>(norm * dout[at]);
      accb += static_cast<double>(dout[at]);
    }
    pw[i] = accw;
    pb[i] = accb;
  }
}

// dst (C) += sum over chunks of partial (chunks, C); dst may be null (then nothing is written).
__global__ void colsum_final_kernel(float* dst0, const double* __restrict__ p0, float* dst1,
                                    const double* __restrict__ p1, int chunks, int C) {
  const int c = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (c >= C) return;
  if (dst0 != nullptr) {
    double acc = 0.0;
    for (int k = 0; k < chunks; ++k) acc += p0[static_cast<std::size_t>(k) * C + c];
    dst0[c] += static_cast<float>(acc);
  }
  if (dst1 != nullptr) {
    double acc = 0.0;
    for (int k = 0; k < chunks; ++k) acc += p1[static_cast<std::size_t>(k) * C + c];
    dst1[c] += static_cast<float>(acc);
  }
}

// out (N, C) rows = bias (C).
__global__ void broadcast_rows_kernel(float* __restrict__ out, const float* __restrict__ bias,
                                      std::size_t total, int C) {
  for (std::size_t i = global_index(); i < total; i += global_stride()) out[i] = bias[i % C];
}

// x (N, C) rows += bias (C).
__global__ void add_rows_kernel(float* __restrict__ x, const float* __restrict__ bias, std::size_t total,
                                int C) {
  for (std::size_t i = global_index(); i < total; i += global_stride()) x[i] += bias[i % C];
}

// ---- softmax + cross-entropy (one block per row) ----------------------------------------------------

constexpr int kXentThreads = 512;

__global__ void softmax_xent_forward_kernel(float* __restrict__ losses, float* __restrict__ probs,
                                            const float* __restrict__ logits,
                                            const int32_t* __restrict__ targets, int V, int Vp) {
  __shared__ float smax[32];
  __shared__ double ssum[32];
  const std::size_t off = static_cast<std::size_t>(blockIdx.x) * Vp;
  const float* l = logits + off;  // (Vp), first V valid
  float* p = probs + off;         // (Vp)
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, l[i]);
  mx = block_max(mx, smax);
  double s = 0.0;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float e = expf(l[i] - mx);
    p[i] = e;
    s += static_cast<double>(e);
  }
  s = block_sum(s, ssum);
  const auto inv = static_cast<float>(1.0 / s);
  // Each thread rescales exactly the entries it wrote above: no barrier needed.
  for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] *= inv;
  for (int i = V + threadIdx.x; i < Vp; i += blockDim.x) p[i] = 0.0f;  // padded columns
  if (threadIdx.x == 0 && losses != nullptr) {
    const int t = targets[blockIdx.x];
    // An out-of-range target cannot throw from here; it yields a NaN loss instead of a stray read.
    if (t == kIgnoreTarget) {
      losses[blockIdx.x] = 0.0f;
    } else {
      losses[blockIdx.x] =
          (t < 0 || t >= V) ? NAN : static_cast<float>(log(s) - static_cast<double>(l[t] - mx));
    }
  }
}

__global__ void softmax_xent_backward_kernel(float* __restrict__ dlogits, const float* __restrict__ probs,
                                             const int32_t* __restrict__ targets, int V, int Vp,
                                             float dloss) {
  const std::size_t off = static_cast<std::size_t>(blockIdx.x) * Vp;
  const float* p = probs + off;  // (Vp)
  float* d = dlogits + off;      // (Vp)
  const int t = targets[blockIdx.x];
  if (t == kIgnoreTarget) return;  // no loss at this position, hence no gradient
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float indicator = i == t ? 1.0f : 0.0f;
    d[i] += (p[i] - indicator) * dloss;
  }
}

}  // namespace

// ---- encoder --------------------------------------------------------------------------------------

void CudaBackend::encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                                  int B, int T, int C) {
  const std::size_t total = static_cast<std::size_t>(B) * T * C;
  if (total == 0) return;
  encoder_forward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(out, tokens, wte, wpe, total, T, C);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                   int T, int C) {
  const int N = B * T;
  if (N == 0 || C == 0) return;
  if (dwpe != nullptr) {
    const std::size_t TC = static_cast<std::size_t>(T) * C;
    encoder_dwpe_kernel<<<grid_for(TC), kThreads, 0, stream()>>>(dwpe, dout, B, T, C);
    TT_CUDA_CHECK_LAUNCH();
  }
  if (dwte == nullptr) return;
  // Scratch: positions (N), sorted tokens (N), sorted positions (N), then CUB's temporary storage.
  std::size_t temp_bytes = 0;
  TT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, tokens, static_cast<int32_t*>(nullptr),
                                                static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), N, 0, 32, stream()));
  const std::size_t ints = (3 * static_cast<std::size_t>(N) + 63) / 64 * 64;  // keep the CUB part aligned
  auto* base = static_cast<char*>(sort_scratch_.get(ints * sizeof(int32_t) + temp_bytes, stream()));
  auto* pos = reinterpret_cast<int32_t*>(base);  // (N)
  int32_t* sorted_tok = pos + N;                 // (N)
  int32_t* sorted_pos = sorted_tok + N;          // (N)
  void* temp = base + ints * sizeof(int32_t);
  iota_kernel<<<grid_for(static_cast<std::size_t>(N)), kThreads, 0, stream()>>>(pos, N);
  TT_CUDA_CHECK_LAUNCH();
  // Stable radix sort of (token, position) pairs by token.
  TT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, tokens, sorted_tok, pos, sorted_pos, N, 0,
                                                32, stream()));
  encoder_dwte_kernel<<<static_cast<unsigned>(N), 128, 0, stream()>>>(dwte, dout, sorted_tok, sorted_pos, N,
                                                                      C);
  TT_CUDA_CHECK_LAUNCH();
}

// ---- layernorm ------------------------------------------------------------------------------------

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int N, int C) {
  if (N == 0) return;
  layernorm_forward_kernel<<<grid_for_warps(N), kThreads, 0, stream()>>>(out, mean, rstd, inp, weight, bias,
                                                                         N, C);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  if (dinp != nullptr) {
    layernorm_backward_dinp_kernel<<<grid_for_warps(N), kThreads, 0, stream()>>>(dinp, dout, inp, weight,
                                                                                 mean, rstd, N, C);
    TT_CUDA_CHECK_LAUNCH();
  }
  if (dweight == nullptr && dbias == nullptr) return;
  const int rows = rows_per_chunk(N);
  const int chunks = (N + rows - 1) / rows;
  const std::size_t per = static_cast<std::size_t>(chunks) * C;
  double* pw = colsum_scratch_.get<double>(2 * per, stream());  // (chunks, C)
  double* pb = pw + per;                                        // (chunks, C)
  layernorm_param_partial_kernel<<<grid_for(per), kThreads, 0, stream()>>>(pw, pb, dout, inp, mean, rstd, N,
                                                                           C, rows);
  TT_CUDA_CHECK_LAUNCH();
  colsum_final_kernel<<<(C + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(dweight, pw, dbias, pb,
                                                                                chunks, C);
  TT_CUDA_CHECK_LAUNCH();
}

// ---- matmul ---------------------------------------------------------------------------------------

void CudaBackend::chunk_sums_add(float* dst, const double* partial, int chunks, int C) {
  colsum_final_kernel<<<(C + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(dst, partial, nullptr,
                                                                                nullptr, chunks, C);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::column_sums_add(float* dst, const float* src, int N, int C) {
  if (N == 0 || C == 0) return;
  const int rows = rows_per_chunk(N);
  const int chunks = (N + rows - 1) / rows;
  const std::size_t per = static_cast<std::size_t>(chunks) * C;
  double* partial = colsum_scratch_.get<double>(per, stream());  // (chunks, C)
  colsum_partial_kernel<<<grid_for(per), kThreads, 0, stream()>>>(partial, src, N, C, rows);
  TT_CUDA_CHECK_LAUNCH();
  chunk_sums_add(dst, partial, chunks, C);
}

void CudaBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                                 int IC, int OC) {
  if (N == 0 || OC == 0) return;
  float beta = 0.0f;
  if (bias != nullptr) {
    // Seed out with the bias and let the gemm add the product (beta = 1), as the CPU backend.
    const std::size_t total = static_cast<std::size_t>(N) * OC;
    broadcast_rows_kernel<<<grid_for(total), kThreads, 0, stream()>>>(out, bias, total, OC);
    TT_CUDA_CHECK_LAUNCH();
    beta = 1.0f;
  }
  // out^T (OC, N) = weight (OC, IC) @ inp^T (IC, N); weight is stored as a column-major (IC, OC).
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, 1.0f, weight, IC, inp, IC, beta, out, OC);
}

void CudaBackend::add_bias(float* x, const float* bias, int N, int C) {
  const std::size_t total = static_cast<std::size_t>(N) * C;
  if (total == 0) return;
  add_rows_kernel<<<grid_for(total), kThreads, 0, stream()>>>(x, bias, total, C);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int N, int IC, int OC) {
  // dinp (N, IC) += dout (N, OC) @ weight (OC, IC)   [column-major: dinp^T = weight^T' @ dout^T]
  if (dinp != nullptr) gemm(CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, 1.0f, weight, IC, dout, OC, 1.0f, dinp, IC);
  // dweight (OC, IC) += dout^T (OC, N) @ inp (N, IC)   [column-major: dweight^T = inp^T @ dout]
  if (dweight != nullptr)
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, 1.0f, inp, IC, dout, OC, 1.0f, dweight, IC);
  // dbias (OC) += column sums of dout (N, OC)
  if (dbias != nullptr) column_sums_add(dbias, dout, N, OC);
}

// ---- softmax + cross-entropy ----------------------------------------------------------------------

void CudaBackend::softmax_xent_forward(float* losses, float* probs, const float* logits,
                                       const int32_t* targets, int N, int V, int Vp) {
  if (N == 0) return;
  softmax_xent_forward_kernel<<<static_cast<unsigned>(N), kXentThreads, 0, stream()>>>(losses, probs, logits,
                                                                                       targets, V, Vp);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::softmax_xent_backward(float* dlogits, const float* probs, const int32_t* targets, int N,
                                        int V, int Vp, float dloss) {
  if (N == 0) return;
  softmax_xent_backward_kernel<<<static_cast<unsigned>(N), kXentThreads, 0, stream()>>>(
      dlogits, probs, targets, V, Vp, dloss);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
