// CPU backend: multi-head self-attention, causal (GPT-2) or bidirectional (BERT).
//
// Work is split over (batch, head) pairs with OpenMP; inside a pair the products QK^T, att@V and
// their gradients are single-threaded sgemms. OpenBLAS is switched to one thread for the duration
// (its documented mode for being called from several threads at once) and restored afterwards, so
// the result does not depend on the thread count. The causal mask is exploited by row blocks: rows
// [r0, r1) of the score matrix only need keys [0, r1), which roughly halves the work for long T.
// Bidirectional attention uses all T keys in every block.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_math.h"

namespace tt {

namespace {

// Rows of the (T, T) score matrix handled by one sgemm. Smaller blocks waste less work above the
// diagonal; larger ones run sgemm closer to its peak. For T <= 128 there is a single block.
constexpr int kRowBlock = 128;

// Sets OpenBLAS to one thread for a scope, then back to the backend's count.
class SingleThreadedBlas {
 public:
  explicit SingleThreadedBlas(int restore) : restore_(restore) { openblas_set_num_threads(1); }
  ~SingleThreadedBlas() { openblas_set_num_threads(restore_); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int restore_;
};

// Keys a block of rows ending at r1 reads, and keys row i reads: [0, keys).
int block_keys(AttentionMask mask, int r1, int T) {
  return mask == AttentionMask::Causal ? r1 : T;
}
int row_keys(AttentionMask mask, int i, int T) {
  return mask == AttentionMask::Causal ? i + 1 : T;
}

}  // namespace

void CpuBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                   AttentionMask mask) {
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int pairs = B * NH;
  SingleThreadedBlas blas_guard(threads_);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int bh = 0; bh < pairs; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const float* q = qkv + static_cast<std::ptrdiff_t>(b) * T * C3 + h * hs;  // (T, hs), row stride 3C
    const float* k = q + C;                                                   // (T, hs), row stride 3C
    const float* v = q + 2 * C;                                               // (T, hs), row stride 3C
    float* a = att + static_cast<std::ptrdiff_t>(bh) * T * T;                 // (T, T)
    float* o = out + static_cast<std::ptrdiff_t>(b) * T * C + h * hs;         // (T, hs), row stride C
    for (int r0 = 0; r0 < T; r0 += kRowBlock) {
      const int r1 = std::min(T, r0 + kRowBlock);
      const int rows = r1 - r0;
      const int nk = block_keys(mask, r1, T);
      float* ablk = a + static_cast<std::ptrdiff_t>(r0) * T;  // (rows, T), first nk columns computed
      // scores (rows, nk) = scale * q[r0:r1] @ k[0:nk]^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, hs, scale,
                  q + static_cast<std::ptrdiff_t>(r0) * C3, C3, k, C3, 0.0f, ablk, T);
      // Softmax per row over its keys [0, kn); with the causal mask everything right of the diagonal is 0.
      for (int i = r0; i < r1; ++i) {
        const int kn = row_keys(mask, i, T);
        float* __restrict row = a + static_cast<std::ptrdiff_t>(i) * T;  // (T)
        float mx = row[0];
        for (int j = 1; j < kn; ++j) mx = std::max(mx, row[j]);
        cpu::exp_shifted(row, row, mx, kn);
        float sum = 0.0f;
        for (int j = 0; j < kn; ++j) sum += row[j];
        const float inv = 1.0f / sum;
        for (int j = 0; j < kn; ++j) row[j] *= inv;
        for (int j = kn; j < T; ++j) row[j] = 0.0f;
      }
      // out[r0:r1] (rows, hs) = att[r0:r1, 0:nk] @ v[0:nk]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hs, nk, 1.0f, ablk, T, v, C3, 0.0f,
                  o + static_cast<std::ptrdiff_t>(r0) * C, C);
    }
  }
}

void CpuBackend::attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                    const float* att, int B, int T, int C, int NH, AttentionMask mask) {
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int pairs = B * NH;
  SingleThreadedBlas blas_guard(threads_);
  // Each (b, h) writes only its own head's columns of dqkv and its own (T, T) scratch: no races,
  // and within a pair the row blocks accumulate in a fixed order.
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int bh = 0; bh < pairs; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const std::ptrdiff_t qoff = static_cast<std::ptrdiff_t>(b) * T * C3 + h * hs;
    const float* q = qkv + qoff;  // (T, hs), row stride 3C; k at +C, v at +2C
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* dq = dqkv + qoff;  // (T, hs), row stride 3C; dk at +C, dv at +2C
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    const float* a = att + static_cast<std::ptrdiff_t>(bh) * T * T;           // (T, T)
    float* da = datt_scratch + static_cast<std::ptrdiff_t>(bh) * T * T;       // (T, T)
    const float* g = dout + static_cast<std::ptrdiff_t>(b) * T * C + h * hs;  // (T, hs), row stride C
    for (int r0 = 0; r0 < T; r0 += kRowBlock) {
      const int r1 = std::min(T, r0 + kRowBlock);
      const int rows = r1 - r0;
      const int nk = block_keys(mask, r1, T);
      const float* ablk = a + static_cast<std::ptrdiff_t>(r0) * T;  // (rows, nk) used, row stride T
      float* dablk = da + static_cast<std::ptrdiff_t>(r0) * T;      // (rows, nk) used, row stride T
      const float* gblk = g + static_cast<std::ptrdiff_t>(r0) * C;  // (rows, hs), row stride C
      // datt (rows, nk) = dout[r0:r1] @ v[0:nk]^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, hs, 1.0f, gblk, C, v, C3, 0.0f, dablk,
                  T);
      // dv[0:nk] (nk, hs) += att[r0:r1, 0:nk]^T @ dout[r0:r1]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, rows, 1.0f, ablk, T, gblk, C, 1.0f, dv,
                  C3);
      // Softmax backward in place: dpre_ij = scale * att_ij * (datt_ij - sum_k att_ik datt_ik), j < kn.
      for (int i = r0; i < r1; ++i) {
        const int kn = row_keys(mask, i, T);
        const float* __restrict arow = a + static_cast<std::ptrdiff_t>(i) * T;  // (T)
        float* __restrict drow = da + static_cast<std::ptrdiff_t>(i) * T;       // (T)
        float dot = 0.0f;
        for (int j = 0; j < kn; ++j) dot += arow[j] * drow[j];
        for (int j = 0; j < kn; ++j) drow[j] = scale * arow[j] * (drow[j] - dot);
        for (int j = kn; j < nk; ++j) drow[j] = 0.0f;
      }
      // dq[r0:r1] (rows, hs) += dpre (rows, nk) @ k[0:nk]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hs, nk, 1.0f, dablk, T, k, C3, 1.0f,
                  dq + static_cast<std::ptrdiff_t>(r0) * C3, C3);
      // dk[0:nk] (nk, hs) += dpre^T (nk, rows) @ q[r0:r1]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, rows, 1.0f, dablk, T,
                  q + static_cast<std::ptrdiff_t>(r0) * C3, C3, 1.0f, dk, C3);
    }
  }
}

}  // namespace tt
