// CPU backend: the ops a Llama adds to GPT-2's: RMSNorm, rotary position embeddings and SwiGLU.
// Grouped-query attention is in cpu_ops_attention.cpp. Rows are independent except for RMSNorm's weight
// gradient, which sums over rows by column blocks as layernorm's does (deterministic for any thread count).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_common.h"
#include "core/cpu/cpu_math.h"

namespace tt {

using cpu::kColBlock;
using cpu::kParallelMin;

// ---- RMSNorm --------------------------------------------------------------------------------------

void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                                 float eps) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * C >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* __restrict x = inp + static_cast<std::ptrdiff_t>(n) * C;  // (C)
    float* __restrict o = out + static_cast<std::ptrdiff_t>(n) * C;        // (C)
    double ss = 0.0;  // in double, as layernorm's statistics
    for (int c = 0; c < C; ++c) ss += static_cast<double>(x[c]) * x[c];
    const float rs = static_cast<float>(1.0 / std::sqrt(ss / C + static_cast<double>(eps)));
    // Backward recomputes norm = x * rs from the saved float rstd, so use exactly that here.
    for (int c = 0; c < C; ++c) o[c] = x[c] * rs * weight[c];
    if (rstd != nullptr) rstd[n] = rs;
  }
}

void CpuBackend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int N, int C) {
  const bool par = static_cast<std::ptrdiff_t>(N) * C >= kParallelMin;
  // dinp (N, C): with norm = x * rstd and dnorm = weight * dout, dinp = rstd * (dnorm - norm * mean_c(dnorm *
  // norm)).
  if (dinp != nullptr) {
#pragma omp parallel for num_threads(threads_) schedule(static) if (par)
    for (int n = 0; n < N; ++n) {
      const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * C;
      const float* __restrict x = inp + off;   // (C)
      const float* __restrict g = dout + off;  // (C)
      float* __restrict d = dinp + off;        // (C)
      const float rs = rstd[n];
      double dot = 0.0;
      for (int c = 0; c < C; ++c) dot += static_cast<double>(weight[c] * g[c]) * (x[c] * rs);
      const float b = static_cast<float>(dot / C);
      for (int c = 0; c < C; ++c) d[c] += (weight[c] * g[c] - x[c] * rs * b) * rs;
    }
  }
  // dweight (C): one sequential double sum over rows per column, columns in blocks.
  if (dweight != nullptr) {
    const int nblocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for num_threads(threads_) schedule(static) if (par)
    for (int cb = 0; cb < nblocks; ++cb) {
      const int c0 = cb * kColBlock;
      const int w = std::min(C, c0 + kColBlock) - c0;
      double acc[kColBlock] = {};
      for (int n = 0; n < N; ++n) {
        const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * C + c0;
        const float* __restrict x = inp + off;   // (w)
        const float* __restrict g = dout + off;  // (w)
        const float rs = rstd[n];
        for (int j = 0; j < w; ++j) acc[j] += static_cast<double>(x[j] * rs * g[j]);
      }
      for (int j = 0; j < w; ++j) dweight[c0 + j] += static_cast<float>(acc[j]);
    }
  }
}

// ---- rotary position embeddings -------------------------------------------------------------------

namespace {

// cos and sin (T, HS/2) of every position's angles, each angle in double before rounding to float so
// that long contexts (t up to 10^5) keep their precision.
struct RopeTable {
  std::vector<float> cos, sin;
  RopeTable(int T, int HS, float base) : cos(static_cast<std::size_t>(T) * (HS / 2)), sin(cos.size()) {
    const int half = HS / 2;
    for (int i = 0; i < half; ++i) {
      const double inv_freq = std::pow(static_cast<double>(base), -2.0 * i / HS);
      for (int t = 0; t < T; ++t) {
        const double angle = t * inv_freq;
        cos[static_cast<std::size_t>(t) * half + i] = static_cast<float>(std::cos(angle));
        sin[static_cast<std::size_t>(t) * half + i] = static_cast<float>(std::sin(angle));
      }
    }
  }
};

// Turns the pairs (i, i + HS/2) of `heads` heads of every row by their position's angles; sign -1
// turns backwards (the transpose, for the gradient).
void rotate(float* x, int B, int T, int row_floats, int heads, int HS, float base, float sign, int threads) {
  const RopeTable tab(T, HS, base);
  const int half = HS / 2;
  const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(B) * T;
#pragma omp parallel for num_threads(threads) schedule(static) if (N * heads * HS >= kParallelMin)
  for (std::ptrdiff_t bt = 0; bt < N; ++bt) {
    const std::size_t t = static_cast<std::size_t>(bt % T);
    const float* __restrict c = tab.cos.data() + t * half;  // (HS/2)
    const float* __restrict s = tab.sin.data() + t * half;  // (HS/2)
    for (int h = 0; h < heads; ++h) {
      float* __restrict lo = x + bt * row_floats + static_cast<std::ptrdiff_t>(h) * HS;  // (HS/2)
      float* __restrict hi = lo + half;                                                  // (HS/2)
      for (int i = 0; i < half; ++i) {
        const float a = lo[i];
        const float b = hi[i];
        const float si = sign * s[i];
        lo[i] = a * c[i] - b * si;
        hi[i] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

void CpuBackend::rope_forward(float* x, int B, int T, int row_floats, int heads, int HS, float base) {
  rotate(x, B, T, row_floats, heads, HS, base, 1.0f, threads_);
}

void CpuBackend::rope_backward(float* dx, int B, int T, int row_floats, int heads, int HS, float base) {
  rotate(dx, B, T, row_floats, heads, HS, base, -1.0f, threads_);
}

// ---- SwiGLU ---------------------------------------------------------------------------------------

void CpuBackend::swiglu_forward(float* out, const float* inp, int N, int F) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * F >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* gate = inp + static_cast<std::ptrdiff_t>(n) * 2 * F;  // (F), up follows
    cpu::swiglu_span(out + static_cast<std::ptrdiff_t>(n) * F, gate, gate + F, F);
  }
}

void CpuBackend::swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
#pragma omp parallel for num_threads(threads_) \
    schedule(static) if (static_cast <std::ptrdiff_t>(N) * F >= kParallelMin)
  for (int n = 0; n < N; ++n) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(n) * 2 * F;
    const float* gate = inp + off;  // (F), up follows
    float* dgate = dinp + off;      // (F), dup follows
    cpu::swiglu_backward_span(dgate, dgate + F, gate, gate + F, dout + static_cast<std::ptrdiff_t>(n) * F, F);
  }
}

}  // namespace tt
