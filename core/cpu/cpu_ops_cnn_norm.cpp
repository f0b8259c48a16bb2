// CPU backend: batch normalization, ReLU, max/average pooling and global average pooling.
//
// Batch-norm statistics and parameter gradients are one sequential double sum per channel (the work
// is partitioned over channels), and pooling backward is partitioned over (image, channel) planes, so
// every result is bit-identical for any thread count.
#include <cmath>
#include <limits>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_common.h"
#include "core/shape_checks.h"

namespace tt {

using cpu::kParallelMin;

namespace {

// acc[lane] += f(x[i]) over n values in double, in 8 independent lanes that lanes_total() combines in
// a fixed order: the lanes let the compiler vectorise the loop (one double accumulator is a single
// add-latency chain, ~4 cycles an element) while the result stays a fixed function of the input.
constexpr int kLanes = 8;
template <typename F>
void lane_sum(double (&acc)[kLanes], const float* __restrict x, int n, F f) {
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += f(static_cast<double>(x[i + l]));
  }
  for (; i < n; ++i) acc[0] += f(static_cast<double>(x[i]));
}
double lanes_total(const double (&acc)[kLanes]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

// ---- batch normalization --------------------------------------------------------------------------

void CpuBackend::batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean,
                                   float* running_var, const float* inp, const float* weight,
                                   const float* bias, int B, int C, int HW, float momentum, float eps,
                                   bool training) {
  const std::ptrdiff_t M = static_cast<std::ptrdiff_t>(B) * HW;  // values per channel
  if (training && M < 2) {
    throw InputError("batchnorm: training needs more than one value per channel (B*H*W = " +
                     std::to_string(M) + "); use a larger batch");
  }
  const std::ptrdiff_t CHW = static_cast<std::ptrdiff_t>(C) * HW;
#pragma omp parallel for num_threads(threads_) schedule(static) if (M * C >= kParallelMin)
  for (int c = 0; c < C; ++c) {
    float mf = 0.0f;
    float rs = 0.0f;
    if (training) {
      // Two-pass statistics in double (a large mean costs the one-pass formula its digits).
      double acc[kLanes] = {};
      for (int b = 0; b < B; ++b) {
        const float* __restrict x = inp + b * CHW + static_cast<std::ptrdiff_t>(c) * HW;  // (HW)
        lane_sum(acc, x, HW, [](double v) { return v; });
      }
      const double m = lanes_total(acc) / static_cast<double>(M);
      double acc2[kLanes] = {};
      for (int b = 0; b < B; ++b) {
        const float* __restrict x = inp + b * CHW + static_cast<std::ptrdiff_t>(c) * HW;
        lane_sum(acc2, x, HW, [m](double v) { return (v - m) * (v - m); });
      }
      const double ss = lanes_total(acc2);
      const double var = ss / static_cast<double>(M);
      mf = static_cast<float>(m);
      rs = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      if (running_mean != nullptr) {
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mf;
      }
      if (running_var != nullptr) {
        const double unbiased = ss / static_cast<double>(M - 1);
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * static_cast<float>(unbiased);
      }
    } else {
      mf = running_mean[c];
      rs =
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + static_cast<double>(eps)));
    }
    if (mean != nullptr) mean[c] = mf;
    if (rstd != nullptr) rstd[c] = rs;
    // out = (x - mean) * rstd * w + b folded into one multiply-add per element.
    const float w = weight != nullptr ? weight[c] : 1.0f;
    const float scale = rs * w;
    const float shift = (bias != nullptr ? bias[c] : 0.0f) - mf * scale;
    for (int b = 0; b < B; ++b) {
      const std::ptrdiff_t off = b * CHW + static_cast<std::ptrdiff_t>(c) * HW;
      const float* __restrict x = inp + off;  // (HW)
      float* __restrict o = out + off;        // (HW)
      for (int i = 0; i < HW; ++i) o[i] = x[i] * scale + shift;
    }
  }
}

void CpuBackend::batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int B, int C, int HW) {
  const std::ptrdiff_t M = static_cast<std::ptrdiff_t>(B) * HW;
  const std::ptrdiff_t CHW = static_cast<std::ptrdiff_t>(C) * HW;
#pragma omp parallel for num_threads(threads_) schedule(static) if (M * C >= kParallelMin)
  for (int c = 0; c < C; ++c) {
    const float mn = mean[c];
    const float rs = rstd[c];
    // sum_g = sum dout, sum_gn = sum dout * norm over the channel's M values, norm = (x - mean) * rstd.
    // Both sums in one pass over (dout, inp), each in kLanes fixed lanes.
    double acc_g[kLanes] = {};
    double acc_gn[kLanes] = {};
    for (int b = 0; b < B; ++b) {
      const std::ptrdiff_t off = b * CHW + static_cast<std::ptrdiff_t>(c) * HW;
      const float* __restrict x = inp + off;   // (HW)
      const float* __restrict g = dout + off;  // (HW)
      int i = 0;
      for (; i + kLanes <= HW; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) {
          const double gv = static_cast<double>(g[i + l]);
          acc_g[l] += gv;
          acc_gn[l] += gv * static_cast<double>((x[i + l] - mn) * rs);
        }
      }
      for (; i < HW; ++i) {
        acc_g[0] += static_cast<double>(g[i]);
        acc_gn[0] += static_cast<double>(g[i]) * static_cast<double>((x[i] - mn) * rs);
      }
    }
    const double sum_g = lanes_total(acc_g);
    const double sum_gn = lanes_total(acc_gn);
    if (dweight != nullptr) dweight[c] += static_cast<float>(sum_gn);
    if (dbias != nullptr) dbias[c] += static_cast<float>(sum_g);
    if (dinp == nullptr) continue;
    // dinp = w * rstd * (dout - mean(dout) - norm * mean(dout * norm)).
    const float w = weight != nullptr ? weight[c] : 1.0f;
    const float k = w * rs;
    const float a = static_cast<float>(sum_g / static_cast<double>(M));
    const float bnorm = static_cast<float>(sum_gn / static_cast<double>(M));
    for (int b = 0; b < B; ++b) {
      const std::ptrdiff_t off = b * CHW + static_cast<std::ptrdiff_t>(c) * HW;
      const float* __restrict x = inp + off;
      const float* __restrict g = dout + off;
      float* __restrict d = dinp + off;
      for (int i = 0; i < HW; ++i) d[i] += k * (g[i] - a - (x[i] - mn) * rs * bnorm);
    }
  }
}

// ---- ReLU -----------------------------------------------------------------------------------------

void CpuBackend::relu_forward(float* out, const float* inp, std::size_t n) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (N >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < N; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void CpuBackend::relu_backward(float* dinp, const float* x, const float* dout, std::size_t n) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (N >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < N; ++i) dinp[i] += x[i] > 0.0f ? dout[i] : 0.0f;
}

// ---- pooling --------------------------------------------------------------------------------------

void CpuBackend::maxpool2d_forward(float* out, int32_t* argmax, const float* inp, const Pool2dShape& s) {
  check_pool_shape(s, "maxpool2d");
  const int OH = s.OH();
  const int OW = s.OW();
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(s.B) * s.C;
  const std::ptrdiff_t in_plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
  const std::ptrdiff_t out_plane = static_cast<std::ptrdiff_t>(OH) * OW;
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * in_plane >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* __restrict x = inp + p * in_plane;  // (H, W)
    float* __restrict o = out + p * out_plane;       // (OH, OW)
    int32_t* __restrict am = argmax + p * out_plane;
    for (int oh = 0; oh < OH; ++oh) {
      for (int ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int32_t at = -1;
        for (int kh = 0; kh < s.k; ++kh) {
          const int ih = oh * s.stride - s.pad + kh;
          if (ih < 0 || ih >= s.H) continue;
          for (int kw = 0; kw < s.k; ++kw) {
            const int iw = ow * s.stride - s.pad + kw;
            if (iw < 0 || iw >= s.W) continue;
            const float v = x[ih * s.W + iw];
            // Strictly greater keeps the first maximum; NaN wins so that it propagates (as PyTorch).
            if (at < 0 || v > best || std::isnan(v)) {
              best = v;
              at = ih * s.W + iw;
              if (std::isnan(v)) break;
            }
          }
        }
        o[oh * OW + ow] = best;
        am[oh * OW + ow] = at;
      }
    }
  }
}

void CpuBackend::maxpool2d_backward(float* dinp, const float* dout, const int32_t* argmax,
                                    const Pool2dShape& s) {
  check_pool_shape(s, "maxpool2d");
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(s.B) * s.C;
  const std::ptrdiff_t in_plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
  const std::ptrdiff_t out_plane = static_cast<std::ptrdiff_t>(s.OH()) * s.OW();
  // One thread per plane, outputs in order: overlapping windows add into the same input in a fixed order.
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * in_plane >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    float* __restrict dx = dinp + p * in_plane;
    const float* __restrict g = dout + p * out_plane;
    const int32_t* __restrict am = argmax + p * out_plane;
    for (std::ptrdiff_t i = 0; i < out_plane; ++i) dx[am[i]] += g[i];
  }
}

void CpuBackend::avgpool2d_forward(float* out, const float* inp, const Pool2dShape& s) {
  check_pool_shape(s, "avgpool2d");
  const int OH = s.OH();
  const int OW = s.OW();
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(s.B) * s.C;
  const std::ptrdiff_t in_plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
  const std::ptrdiff_t out_plane = static_cast<std::ptrdiff_t>(OH) * OW;
  const float inv = 1.0f / static_cast<float>(s.k * s.k);
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * in_plane >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* __restrict x = inp + p * in_plane;
    float* __restrict o = out + p * out_plane;
    for (int oh = 0; oh < OH; ++oh) {
      for (int ow = 0; ow < OW; ++ow) {
        float acc = 0.0f;
        for (int kh = 0; kh < s.k; ++kh) {
          const int ih = oh * s.stride - s.pad + kh;
          if (ih < 0 || ih >= s.H) continue;
          for (int kw = 0; kw < s.k; ++kw) {
            const int iw = ow * s.stride - s.pad + kw;
            if (iw >= 0 && iw < s.W) acc += x[ih * s.W + iw];
          }
        }
        o[oh * OW + ow] = acc * inv;
      }
    }
  }
}

void CpuBackend::avgpool2d_backward(float* dinp, const float* dout, const Pool2dShape& s) {
  check_pool_shape(s, "avgpool2d");
  const int OH = s.OH();
  const int OW = s.OW();
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(s.B) * s.C;
  const std::ptrdiff_t in_plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
  const std::ptrdiff_t out_plane = static_cast<std::ptrdiff_t>(OH) * OW;
  const float inv = 1.0f / static_cast<float>(s.k * s.k);
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * in_plane >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    float* __restrict dx = dinp + p * in_plane;
    const float* __restrict g = dout + p * out_plane;
    for (int oh = 0; oh < OH; ++oh) {
      for (int ow = 0; ow < OW; ++ow) {
        const float v = g[oh * OW + ow] * inv;
        for (int kh = 0; kh < s.k; ++kh) {
          const int ih = oh * s.stride - s.pad + kh;
          if (ih < 0 || ih >= s.H) continue;
          for (int kw = 0; kw < s.k; ++kw) {
            const int iw = ow * s.stride - s.pad + kw;
            if (iw >= 0 && iw < s.W) dx[ih * s.W + iw] += v;
          }
        }
      }
    }
  }
}

void CpuBackend::global_avgpool_forward(float* out, const float* inp, int B, int C, int HW) {
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(B) * C;
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * HW >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* __restrict x = inp + p * HW;  // (HW)
    double acc = 0.0;
    for (int i = 0; i < HW; ++i) acc += static_cast<double>(x[i]);
    out[p] = static_cast<float>(acc / HW);
  }
}

void CpuBackend::global_avgpool_backward(float* dinp, const float* dout, int B, int C, int HW) {
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(B) * C;
  const float inv = 1.0f / static_cast<float>(HW);
#pragma omp parallel for num_threads(threads_) schedule(static) if (planes * HW >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    float* __restrict dx = dinp + p * HW;
    const float v = dout[p] * inv;
    for (int i = 0; i < HW; ++i) dx[i] += v;
  }
}

}  // namespace tt
