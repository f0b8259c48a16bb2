// CPU backend: encoder (token + position embedding), layernorm, matmul (+bias), GELU and
// softmax-cross-entropy. Attention is in cpu_ops_attention.cpp.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_common.h"
#include "core/cpu/cpu_math.h"

namespace tt {

using cpu::kColBlock;
using cpu::kParallelMin;

namespace {

constexpr float kLayerNormEps = 1e-5f;
constexpr std::ptrdiff_t kSpan = 4096;  // elements per call of a vectorised span function

// Number of column blocks of width kColBlock covering C columns.
int col_blocks(int C) {
  return (C + kColBlock - 1) / kColBlock;
}

}  // namespace

// ---- encoder --------------------------------------------------------------------------------------

void CpuBackend::encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                                 int T, int C) {
  const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(B) * T;
#pragma omp parallel for num_threads(threads_) schedule(static) if (N * C >= kParallelMin)
  for (std::ptrdiff_t bt = 0; bt < N; ++bt) {
    const std::ptrdiff_t t = bt % T;
    float* __restrict o = out + bt * C;                                             // (C)
    const float* __restrict e = wte + static_cast<std::ptrdiff_t>(tokens[bt]) * C;  // (C)
    if (wpe == nullptr) {
      std::copy(e, e + C, o);
      continue;
    }
    const float* __restrict p = wpe + t * C;  // (C)
    for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
  }
}

void CpuBackend::encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                  int T, int C) {
  const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(B) * T;
  // dwpe (maxT, C): position t collects dout[b, t, :] over b, in b order. Rows t are disjoint.
  if (dwpe != nullptr) {
#pragma omp parallel for num_threads(threads_) schedule(static) if (N * C >= kParallelMin)
    for (int t = 0; t < T; ++t) {
      float* __restrict d = dwpe + static_cast<std::ptrdiff_t>(t) * C;  // (C)
      for (int b = 0; b < B; ++b) {
        const float* __restrict g = dout + (static_cast<std::ptrdiff_t>(b) * T + t) * C;  // (C)
        for (int c = 0; c < C; ++c) d[c] += g[c];
      }
    }
  }
  // dwte (V, C): tokens repeat, so rows of dwte are shared between positions. Partition over column
  // blocks instead: each thread owns some columns of every row and walks the positions in order, so
  // there is no race and every element is one sequential sum, whatever the thread count.
  if (dwte != nullptr) {
    const int nblocks = col_blocks(C);
#pragma omp parallel for num_threads(threads_) schedule(static) if (N * C >= kParallelMin)
    for (int cb = 0; cb < nblocks; ++cb) {
      const int c0 = cb * kColBlock;
      const int c1 = std::min(C, c0 + kColBlock);
      for (std::ptrdiff_t bt = 0; bt < N; ++bt) {
        float* __restrict d = dwte + static_cast<std::ptrdiff_t>(tokens[bt]) * C;  // (C)
        const float* __restrict g = dout + bt * C;                                 // (C)
        for (int c = c0; c < c1; ++c) d[c] += g[c];
      }
    }
  }
}

// ---- layernorm ------------------------------------------------------------------------------------

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int N, int C) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * C >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* __restrict x = inp + static_cast<std::ptrdiff_t>(n) * C;  // (C)
    float* __restrict o = out + static_cast<std::ptrdiff_t>(n) * C;        // (C)
    // Statistics in double, two-pass: the variance of activations with a large mean loses digits in
    // float with the one-pass formula.
    double s = 0.0;
    for (int c = 0; c < C; ++c) s += x[c];
    const double m = s / C;
    double ss = 0.0;
    for (int c = 0; c < C; ++c) {
      const double d = x[c] - m;
      ss += d * d;
    }
    const float mf = static_cast<float>(m);
    const float rs = static_cast<float>(1.0 / std::sqrt(ss / C + static_cast<double>(kLayerNormEps)));
    // The backward pass recomputes norm from the saved float mean/rstd, so use exactly those here.
    if (bias != nullptr) {
      for (int c = 0; c < C; ++c) o[c] = (x[c] - mf) * rs * weight[c] + bias[c];
    } else {
      for (int c = 0; c < C; ++c) o[c] = (x[c] - mf) * rs * weight[c];
    }
    if (mean != nullptr) mean[n] = mf;
    if (rstd != nullptr) rstd[n] = rs;
  }
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int N, int C) {
  const bool par = static_cast<std::ptrdiff_t>(N) * C >= kParallelMin;
  // dinp (N, C): row-local, parallel over rows. With norm = (x - mean) * rstd and dnorm = weight * dout:
  // dinp = rstd * (dnorm - mean_c(dnorm) - norm * mean_c(dnorm * norm)).
  if (dinp != nullptr) {
#pragma omp parallel for num_threads(threads_) schedule(static) if (par)
    for (int n = 0; n < N; ++n) {
      const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * C;
      const float* __restrict x = inp + off;   // (C)
      const float* __restrict g = dout + off;  // (C)
      float* __restrict d = dinp + off;        // (C)
      const float mn = mean[n];
      const float rs = rstd[n];
      double sum_dnorm = 0.0;
      double sum_dnorm_norm = 0.0;
      for (int c = 0; c < C; ++c) {
        const float norm = (x[c] - mn) * rs;
        const float dnorm = weight[c] * g[c];
        sum_dnorm += dnorm;
        sum_dnorm_norm += static_cast<double>(dnorm) * norm;
      }
      const float a = static_cast<float>(sum_dnorm / C);
      const float b = static_cast<float>(sum_dnorm_norm / C);
      for (int c = 0; c < C; ++c) {
        const float norm = (x[c] - mn) * rs;
        const float dnorm = weight[c] * g[c];
        d[c] += (dnorm - a - norm * b) * rs;
      }
    }
  }
  // dweight, dbias (C): sums over rows. Partitioned over column blocks so each column is one
  // sequential double sum over n = 0..N-1 (deterministic for any thread count).
  if (dweight != nullptr || dbias != nullptr) {
    const int nblocks = col_blocks(C);
#pragma omp parallel for num_threads(threads_) schedule(static) if (par)
    for (int cb = 0; cb < nblocks; ++cb) {
      const int c0 = cb * kColBlock;
      const int w = std::min(C, c0 + kColBlock) - c0;
      double accw[kColBlock] = {};
      double accb[kColBlock] = {};
      for (int n = 0; n < N; ++n) {
        const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * C + c0;
        const float* __restrict x = inp + off;   // (w)
        const float* __restrict g = dout + off;  // (w)
        const float mn = mean[n];
        const float rs = rstd[n];
        for (int j = 0; j < w; ++j) {
          const float norm = (x[j] - mn) * rs;
          accw[j] += static_cast<double>(norm * g[j]);
          accb[j] += static_cast<double>(g[j]);
        }
      }
      for (int j = 0; j < w; ++j) {
        if (dweight != nullptr) dweight[c0 + j] += static_cast<float>(accw[j]);
        if (dbias != nullptr) dbias[c0 + j] += static_cast<float>(accb[j]);
      }
    }
  }
}

// ---- matmul ---------------------------------------------------------------------------------------

void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                                int IC, int OC) {
  float beta = 0.0f;
  if (bias != nullptr) {
    // Seed out with the bias and let sgemm add the product (beta = 1): one pass over out, not two.
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * OC >= kParallelMin)
    for (int n = 0; n < N; ++n) std::copy(bias, bias + OC, out + static_cast<std::ptrdiff_t>(n) * OC);
    beta = 1.0f;
  }
  use_blas_threads();
  // out (N, OC) = inp (N, IC) @ weight (OC, IC)^T
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, beta, out, OC);
}

void CpuBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, int N, int IC, int OC) {
  use_blas_threads();
  // dinp (N, IC) += dout (N, OC) @ weight (OC, IC)
  if (dinp != nullptr) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC, 1.0f, dinp,
                IC);
  }
  // dweight (OC, IC) += dout (N, OC)^T @ inp (N, IC)
  if (dweight != nullptr) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight,
                IC);
  }
  // dbias (OC) += sum_n dout[n, :], one sequential double sum per column (see layernorm dweight).
  if (dbias != nullptr) {
    const int nblocks = col_blocks(OC);
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * OC >= kParallelMin)
    for (int cb = 0; cb < nblocks; ++cb) {
      const int c0 = cb * kColBlock;
      const int w = std::min(OC, c0 + kColBlock) - c0;
      double acc[kColBlock] = {};
      for (int n = 0; n < N; ++n) {
        const float* __restrict g = dout + static_cast<std::ptrdiff_t>(n) * OC + c0;  // (w)
        for (int j = 0; j < w; ++j) acc[j] += static_cast<double>(g[j]);
      }
      for (int j = 0; j < w; ++j) dbias[c0 + j] += static_cast<float>(acc[j]);
    }
  }
}

void CpuBackend::add_bias(float* x, const float* bias, int N, int C) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * C >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    float* __restrict row = x + static_cast<std::ptrdiff_t>(n) * C;  // (C)
    for (int c = 0; c < C; ++c) row[c] += bias[c];
  }
}

// ---- GELU (tanh approximation) --------------------------------------------------------------------
// Fixed-size spans so the vectorised span functions (cpu_math.h) do the work inside the parallel region.

void CpuBackend::gelu_forward(float* out, const float* inp, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
  const std::ptrdiff_t nspans = cpu::num_chunks(len, kSpan);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t s = 0; s < nspans; ++s) {
    const std::ptrdiff_t i = s * kSpan;
    cpu::gelu_span(out + i, inp + i, std::min(kSpan, len - i));
  }
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
  const std::ptrdiff_t nspans = cpu::num_chunks(len, kSpan);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t s = 0; s < nspans; ++s) {
    const std::ptrdiff_t i = s * kSpan;
    cpu::gelu_backward_span(dinp + i, inp + i, dout + i, std::min(kSpan, len - i));
  }
}

// ---- softmax + cross-entropy ----------------------------------------------------------------------

void CpuBackend::softmax_xent_forward(float* losses, float* probs, const float* logits,
                                      const int32_t* targets, int N, int V, int Vp) {
  // Validate targets up front: an exception cannot leave an OpenMP region.
  for (int n = 0; n < N; ++n) {
    if (targets[n] != kIgnoreTarget && (targets[n] < 0 || targets[n] >= V)) {
      throw InputError("softmax_xent: target " + std::to_string(targets[n]) + " at row " + std::to_string(n) +
                       " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * V >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * Vp;
    const float* __restrict l = logits + off;  // (Vp), first V valid
    float* __restrict p = probs + off;         // (Vp)
    // Max and sum with 8 lanes: exact (max) or fixed-order (sum), and vectorisable.
    constexpr int kLanes = 8;
    float mxl[kLanes];
    for (int j = 0; j < kLanes; ++j) mxl[j] = l[0];
    int i = 0;
    for (; i + kLanes <= V; i += kLanes)
      for (int j = 0; j < kLanes; ++j) mxl[j] = std::max(mxl[j], l[i + j]);
    for (; i < V; ++i) mxl[0] = std::max(mxl[0], l[i]);
    float mx = mxl[0];
    for (int j = 1; j < kLanes; ++j) mx = std::max(mx, mxl[j]);
    cpu::exp_shifted(p, l, mx, V);
    double acc[kLanes] = {};
    for (i = 0; i + kLanes <= V; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += p[i + j];
    for (; i < V; ++i) acc[0] += p[i];
    const double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    const float inv = static_cast<float>(1.0 / sum);
    for (i = 0; i < V; ++i) p[i] *= inv;
    for (i = V; i < Vp; ++i) p[i] = 0.0f;  // padded columns: defined, and never a probability
    // -log p[target] via log-sum-exp: exact where p[target] would underflow to 0.
    if (losses != nullptr) {
      losses[n] = targets[n] == kIgnoreTarget
                      ? 0.0f
                      : static_cast<float>(std::log(sum) - static_cast<double>(l[targets[n]] - mx));
    }
  }
}

void CpuBackend::softmax_xent_backward(float* dlogits, const float* probs, const int32_t* targets, int N,
                                       int V, int Vp, float dloss) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * V >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * Vp;
    const float* __restrict p = probs + off;  // (Vp)
    float* __restrict d = dlogits + off;      // (Vp)
    const int t = targets[n];
    if (t == kIgnoreTarget) continue;  // no loss at this position, hence no gradient
    for (int i = 0; i < V; ++i) {
      const float indicator = i == t ? 1.0f : 0.0f;
      d[i] += (p[i] - indicator) * dloss;
    }
  }
}

}  // namespace tt
