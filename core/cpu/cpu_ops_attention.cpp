// CPU backend: multi-head self-attention, causal (GPT-2, Llama) or bidirectional (BERT), with as many
// key/value heads as query heads (GPT-2, BERT) or fewer, shared by groups of query heads (Llama's
// grouped-query attention). attention_forward/backward are the grouped op with one query head per group.
//
// Work is split over (batch, key/value head) pairs with OpenMP, each pair taking its group's query heads
// in order (so the key and value gradients a group shares are summed in a fixed order, race-free); inside a
// pair the products QK^T, att@V and their gradients are single-threaded sgemms. OpenBLAS is switched to one
// thread for the duration (its documented mode for being called from several threads at once) and restored
// afterwards, so the result does not depend on the thread count. The causal mask is exploited by row blocks:
// rows [r0, r1) of the score matrix only need keys [0, r1), which roughly halves the work for long T.
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

namespace {

// Where one (batch, query head) pair's operands live in the qkv rows (B, T, (NH + 2 NKV) HS).
struct HeadViews {
  std::ptrdiff_t q = 0, k = 0, v = 0;  // offsets into qkv (and dqkv) of this head's first row
  std::ptrdiff_t o = 0;                // offset into out (and dout), rows of NH HS
  int row = 0;                         // qkv row stride (NH + 2 NKV) HS
  int orow = 0;                        // out row stride NH HS
};

HeadViews head_views(int b, int h, int T, int NH, int NKV, int HS) {
  const int kvh = h / (NH / NKV);
  HeadViews v;
  v.row = (NH + 2 * NKV) * HS;
  v.orow = NH * HS;
  const std::ptrdiff_t base = static_cast<std::ptrdiff_t>(b) * T * v.row;
  v.q = base + static_cast<std::ptrdiff_t>(h) * HS;
  v.k = base + static_cast<std::ptrdiff_t>(NH + kvh) * HS;
  v.v = base + static_cast<std::ptrdiff_t>(NH + NKV + kvh) * HS;
  v.o = static_cast<std::ptrdiff_t>(b) * T * v.orow + static_cast<std::ptrdiff_t>(h) * HS;
  return v;
}

// Softmax per row of a block over its keys [0, kn); with the causal mask everything right of the
// diagonal is 0.
void softmax_rows(float* a, int r0, int r1, int T, AttentionMask mask) {
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
}

}  // namespace

void CpuBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                   AttentionMask mask) {
  gqa_attention_forward(out, att, qkv, B, T, NH, NH, C / NH, mask);
}

void CpuBackend::attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                    const float* att, int B, int T, int C, int NH, AttentionMask mask) {
  gqa_attention_backward(dqkv, datt_scratch, dout, qkv, att, B, T, NH, NH, C / NH, mask);
}

void CpuBackend::gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH,
                                       int NKV, int HS, AttentionMask mask) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const int pairs = B * NH;
  SingleThreadedBlas blas_guard(threads_);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int bh = 0; bh < pairs; ++bh) {
    const HeadViews hv = head_views(bh / NH, bh % NH, T, NH, NKV, HS);
    const float* q = qkv + hv.q;                               // (T, HS), row stride hv.row
    const float* k = qkv + hv.k;                               // (T, HS), row stride hv.row
    const float* v = qkv + hv.v;                               // (T, HS), row stride hv.row
    float* a = att + static_cast<std::ptrdiff_t>(bh) * T * T;  // (T, T)
    float* o = out + hv.o;                                     // (T, HS), row stride hv.orow
    for (int r0 = 0; r0 < T; r0 += kRowBlock) {
      const int r1 = std::min(T, r0 + kRowBlock);
      const int rows = r1 - r0;
      const int nk = block_keys(mask, r1, T);
      float* ablk = a + static_cast<std::ptrdiff_t>(r0) * T;  // (rows, T), first nk columns computed
      // scores (rows, nk) = scale * q[r0:r1] @ k[0:nk]^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, HS, scale,
                  q + static_cast<std::ptrdiff_t>(r0) * hv.row, hv.row, k, hv.row, 0.0f, ablk, T);
      softmax_rows(a, r0, r1, T, mask);
      // out[r0:r1] (rows, HS) = att[r0:r1, 0:nk] @ v[0:nk]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, nk, 1.0f, ablk, T, v, hv.row, 0.0f,
                  o + static_cast<std::ptrdiff_t>(r0) * hv.orow, hv.orow);
    }
  }
}

void CpuBackend::gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                        const float* att, int B, int T, int NH, int NKV, int HS,
                                        AttentionMask mask) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const int group = NH / NKV;
  const int pairs = B * NKV;
  SingleThreadedBlas blas_guard(threads_);
  // Each (b, key/value head) writes only its group's columns of dqkv and its query heads' (T, T)
  // scratch: no races, and the group's heads and row blocks accumulate in a fixed order.
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int bkv = 0; bkv < pairs; ++bkv) {
    const int b = bkv / NKV;
    for (int h = (bkv % NKV) * group; h < (bkv % NKV + 1) * group; ++h) {
      const HeadViews hv = head_views(b, h, T, NH, NKV, HS);
      const std::ptrdiff_t bh = static_cast<std::ptrdiff_t>(b) * NH + h;
      const float* q = qkv + hv.q;  // (T, HS), row stride hv.row; likewise k, v, dq, dk, dv
      const float* k = qkv + hv.k;
      const float* v = qkv + hv.v;
      float* dq = dqkv + hv.q;
      float* dk = dqkv + hv.k;
      float* dv = dqkv + hv.v;
      const float* a = att + bh * T * T;      // (T, T)
      float* da = datt_scratch + bh * T * T;  // (T, T)
      const float* g = dout + hv.o;           // (T, HS), row stride hv.orow
      for (int r0 = 0; r0 < T; r0 += kRowBlock) {
        const int r1 = std::min(T, r0 + kRowBlock);
        const int rows = r1 - r0;
        const int nk = block_keys(mask, r1, T);
        const float* ablk = a + static_cast<std::ptrdiff_t>(r0) * T;        // (rows, nk) used, row stride T
        float* dablk = da + static_cast<std::ptrdiff_t>(r0) * T;            // (rows, nk) used, row stride T
        const float* gblk = g + static_cast<std::ptrdiff_t>(r0) * hv.orow;  // (rows, HS)
        // datt (rows, nk) = dout[r0:r1] @ v[0:nk]^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, nk, HS, 1.0f, gblk, hv.orow, v, hv.row,
                    0.0f, dablk, T);
        // dv[0:nk] (nk, HS) += att[r0:r1, 0:nk]^T @ dout[r0:r1]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, HS, rows, 1.0f, ablk, T, gblk, hv.orow, 1.0f,
                    dv, hv.row);
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
        // dq[r0:r1] (rows, HS) += dpre (rows, nk) @ k[0:nk]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, nk, 1.0f, dablk, T, k, hv.row, 1.0f,
                    dq + static_cast<std::ptrdiff_t>(r0) * hv.row, hv.row);
        // dk[0:nk] (nk, HS) += dpre^T (nk, rows) @ q[r0:r1]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, HS, rows, 1.0f, dablk, T,
                    q + static_cast<std::ptrdiff_t>(r0) * hv.row, hv.row, 1.0f, dk, hv.row);
      }
    }
  }
}

}  // namespace tt
