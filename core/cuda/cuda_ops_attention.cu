// CUDA backend: multi-head self-attention, causal (GPT-2) or bidirectional (BERT), and its grouped-query
// form (Llama), of which multi-head attention is the case of as many key/value heads as query heads.
//
// The per-head products are cuBLAS strided batched gemms, reading q, k and v in place from qkv
// (B, T, (NH + 2 NKV) hs) through leading dimension (NH + 2 NKV) hs and head stride hs (no permute
// copies). Query head h reads key/value head h / G (G = NH / NKV query heads per group): the query heads
// r, G + r, 2G + r, ... of one batch row are G hs apart and their key/value heads hs apart, so one call
// per (b, r) batches the NKV groups (with G = 1, one call per b batches every head). The full
// (T, T) score matrix is computed and the causal softmax zeroes everything above the diagonal, so the
// products that follow may read whole rows (bidirectional attention uses them all).
#include <cmath>

#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"

namespace tt::cuda {

namespace {

// att (rows, T) with rows = B*NH*T: row r is query i = r % T, which reads keys [0, kn): kn = i + 1
// when causal, T otherwise. In place: scores -> probabilities on those keys, exactly 0 beyond them.
// One warp per row.
__global__ void softmax_rows_kernel(float* att, std::size_t rows, int T, bool causal) {
  const int lane = threadIdx.x & 31;
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (r >= rows) return;  // whole warps leave together
  const int kn = causal ? static_cast<int>(r % T) + 1 : T;
  float* row = att + r * T;  // (T)
  float mx = -INFINITY;
  for (int j = lane; j < kn; j += 32) mx = fmaxf(mx, row[j]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int j = lane; j < kn; j += 32) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int j = lane; j < kn; j += 32) row[j] *= inv;  // each lane rescales the entries it wrote
  for (int j = kn + lane; j < T; j += 32) row[j] = 0.0f;
}

// datt (rows, T) in place: dpre_ij = scale * att_ij * (datt_ij - sum_k att_ik datt_ik) for the keys
// j < kn of row i (as softmax_rows_kernel), 0 beyond them. One warp per row.
__global__ void softmax_rows_backward_kernel(float* datt, const float* __restrict__ att, std::size_t rows,
                                             int T, float scale, bool causal) {
  const int lane = threadIdx.x & 31;
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int kn = causal ? static_cast<int>(r % T) + 1 : T;
  const float* a = att + r * T;  // (T)
  float* d = datt + r * T;       // (T)
  float dot = 0.0f;
  for (int j = lane; j < kn; j += 32) dot += a[j] * d[j];
  dot = warp_sum(dot);
  for (int j = lane; j < kn; j += 32) d[j] = scale * a[j] * (d[j] - dot);
  for (int j = kn + lane; j < T; j += 32) d[j] = 0.0f;
}

}  // namespace

// Column-major view used below: a row-major (R, K) matrix with row stride ld is a column-major (K, R)
// matrix with leading dimension ld. For one (b, h): q, k, v are row-major (T, hs) with row stride
// R = (NH + 2 NKV) hs; att is (T, T) with heads T*T apart; out/dout are (T, hs) with row stride NH hs and
// heads hs apart. Within one call (fixed b and r), the batch runs over the NKV groups: query heads, att
// and out step G heads, keys and values one head.

void CudaBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                    AttentionMask mask) {
  gqa_attention_forward(out, att, qkv, B, T, NH, NH, C / NH, mask);
}

void CudaBackend::attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                     const float* att, int B, int T, int C, int NH, AttentionMask mask) {
  gqa_attention_backward(dqkv, datt_scratch, dout, qkv, att, B, T, NH, NH, C / NH, mask);
}

void CudaBackend::gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH,
                                        int NKV, int hs, AttentionMask mask) {
  if (B == 0 || T == 0) return;
  const int G = NH / NKV;
  const int C = NH * hs;
  const int R = (NH + 2 * NKV) * hs;
  const long long TT = static_cast<long long>(T) * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<std::size_t>(b) * T * R;  // (T, hs) per head, row stride R
    const float* k = q + C;
    float* a = att + static_cast<std::size_t>(b) * NH * TT;  // (NH, T, T)
    for (int r = 0; r < G; ++r) {
      // scores[i][j] = scale * q_i . k_j   [column-major S^T (T_j, T_i) = K^T' (T, hs) @ Q^T (hs, T)]
      gemm_batched(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, R, hs, q + r * hs, R, 1LL * G * hs, 0.0f,
                   a + r * TT, T, G * TT, NKV);
    }
  }
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  softmax_rows_kernel<<<grid_for_warps(rows), kThreads, 0, stream()>>>(att, rows, T,
                                                                       mask == AttentionMask::Causal);
  TT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<std::size_t>(b) * T * R + C + static_cast<std::size_t>(NKV) * hs;
    const float* a = att + static_cast<std::size_t>(b) * NH * TT;  // (NH, T, T)
    float* o = out + static_cast<std::size_t>(b) * T * C;          // (T, hs) per head, row stride C
    for (int r = 0; r < G; ++r) {
      // out[i][d] = sum_j att[i][j] v[j][d]   [column-major O^T (hs, T) = V^T (hs, T) @ P^T (T, T)]
      gemm_batched(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, R, hs, a + r * TT, T, G * TT, 0.0f,
                   o + r * hs, C, 1LL * G * hs, NKV);
    }
  }
}

void CudaBackend::gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout,
                                         const float* qkv, const float* att, int B, int T, int NH, int NKV,
                                         int hs, AttentionMask mask) {
  if (B == 0 || T == 0) return;
  const int G = NH / NKV;
  const int C = NH * hs;
  const int R = (NH + 2 * NKV) * hs;
  const std::size_t v_off = C + static_cast<std::size_t>(NKV) * hs;  // values' offset in a qkv row
  const long long TT = static_cast<long long>(T) * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<std::size_t>(b) * T * R + v_off;  // (T, hs), row stride R
    const float* a = att + static_cast<std::size_t>(b) * NH * TT;        // (NH, T, T)
    const float* g = dout + static_cast<std::size_t>(b) * T * C;         // (T, hs), row stride C
    float* da = datt_scratch + static_cast<std::size_t>(b) * NH * TT;    // (NH, T, T)
    float* dv = dqkv + static_cast<std::size_t>(b) * T * R + v_off;      // (T, hs), row stride R
    for (int r = 0; r < G; ++r) {
      // datt[i][j] = dout_i . v_j   [column-major dA^T (T_j, T_i) = V^T' @ G^T]
      gemm_batched(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, R, hs, g + r * hs, C, 1LL * G * hs, 0.0f,
                   da + r * TT, T, G * TT, NKV);
      // dv[j][d] += sum_i att[i][j] dout[i][d]   [column-major dV^T (hs, T_j) += G^T (hs, T_i) @ P (T_i,
      // T_j)] over the group's query heads r = 0, 1, ... in turn (stream order, so deterministic)
      gemm_batched(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, g + r * hs, C, 1LL * G * hs, a + r * TT, T,
                   G * TT, 1.0f, dv, R, hs, NKV);
    }
  }
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  softmax_rows_backward_kernel<<<grid_for_warps(rows), kThreads, 0, stream()>>>(
      datt_scratch, att, rows, T, scale, mask == AttentionMask::Causal);
  TT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<std::size_t>(b) * T * R;  // (T, hs), row stride R
    const float* k = q + C;
    const float* da = datt_scratch + static_cast<std::size_t>(b) * NH * TT;  // dpre (NH, T, T)
    float* dq = dqkv + static_cast<std::size_t>(b) * T * R;
    float* dk = dq + C;
    for (int r = 0; r < G; ++r) {
      // dq[i][d] += sum_j dpre[i][j] k[j][d]   [column-major dQ^T (hs, T_i) += K^T (hs, T_j) @ dP^T (T_j,
      // T_i)]
      gemm_batched(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, k, R, hs, da + r * TT, T, G * TT, 1.0f,
                   dq + r * hs, R, 1LL * G * hs, NKV);
      // dk[j][d] += sum_i dpre[i][j] q[i][d]   [column-major dK^T (hs, T_j) += Q^T (hs, T_i) @ dP (T_i, T_j)]
      gemm_batched(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, q + r * hs, R, 1LL * G * hs, da + r * TT, T,
                   G * TT, 1.0f, dk, R, hs, NKV);
    }
  }
}

}  // namespace tt::cuda
