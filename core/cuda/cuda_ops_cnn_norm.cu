// CUDA backend: batch normalization, max/average pooling and global average pooling.
//
// Batch norm is our own kernels rather than cuDNN's: one block per channel computes the statistics
// and parameter gradients as fixed-order double sums (deterministic, same two-pass formulas as the CPU
// backend), and every gradient accumulates (+=) as the interface requires. Pooling backward runs one
// thread per INPUT element, visiting the windows that contain it in the CPU backend's (row-major
// output) order, so no two threads write the same element and no atomics are needed.
#include <cmath>
#include <string>

#include "base/error.h"
#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"
#include "core/shape_checks.h"

namespace tt::cuda {

namespace {

constexpr int kBnThreads = 512;

// ---- batch normalization (one block per channel c of inp (B, C, HW)) -------------------------------

__global__ void batchnorm_forward_kernel(float* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, float* __restrict__ running_mean,
                                         float* __restrict__ running_var, const float* __restrict__ inp,
                                         const float* __restrict__ weight, const float* __restrict__ bias,
                                         int B, int C, int HW, float momentum, float eps, bool training) {
  __shared__ double shared[32];
  const int c = static_cast<int>(blockIdx.x);
  const std::size_t M = static_cast<std::size_t>(B) * HW;  // values of this channel
  auto at = [&](std::size_t m) { return (m / HW * C + c) * HW + m % HW; };
  float mf = 0.0f;
  float rs = 0.0f;
  if (training) {
    double s = 0.0;
    for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) s += static_cast<double>(inp[at(m)]);
    const double mu = block_sum(s, shared) / static_cast<double>(M);
    double ss = 0.0;
    for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) {
      const double d = static_cast<double>(inp[at(m)]) - mu;
      ss += d * d;
    }
    ss = block_sum(ss, shared);
    const double var = ss / static_cast<double>(M);
    mf = static_cast<float>(mu);
    rs = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
    if (threadIdx.x == 0) {
      if (running_mean != nullptr) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mf;
      if (running_var != nullptr) {
        const double unbiased = ss / static_cast<double>(M - 1);
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * static_cast<float>(unbiased);
      }
    }
  } else {
    mf = running_mean[c];
    rs = static_cast<float>(1.0 / sqrt(static_cast<double>(running_var[c]) + static_cast<double>(eps)));
  }
  if (threadIdx.x == 0) {
    if (mean != nullptr) mean[c] = mf;
    if (rstd != nullptr) rstd[c] = rs;
  }
  // out = (x - mean) * rstd * w + b folded into one multiply-add per element, as the CPU backend.
  const float w = weight != nullptr ? weight[c] : 1.0f;
  const float scale = rs * w;
  const float shift = (bias != nullptr ? bias[c] : 0.0f) - mf * scale;
  for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) {
    const std::size_t i = at(m);
    out[i] = inp[i] * scale + shift;
  }
}

__global__ void batchnorm_backward_kernel(float* dinp, float* __restrict__ dweight, float* __restrict__ dbias,
                                          const float* __restrict__ dout, const float* __restrict__ inp,
                                          const float* __restrict__ weight, const float* __restrict__ mean,
                                          const float* __restrict__ rstd, int B, int C, int HW) {
  __shared__ double shared[32];
  const int c = static_cast<int>(blockIdx.x);
  const std::size_t M = static_cast<std::size_t>(B) * HW;
  auto at = [&](std::size_t m) { return (m / HW * C + c) * HW + m % HW; };
  const float mn = mean[c];
  const float rs = rstd[c];
  // sum_g = sum dout, sum_gn = sum dout * norm over the channel, norm = (x - mean) * rstd.
  double sum_g = 0.0;
  double sum_gn = 0.0;
  for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) {
    const std::size_t i = at(m);
    sum_g += static_cast<double>(dout[i]);
    sum_gn += static_cast<double>(dout[i]) * static_cast<double>((inp[i] - mn) * rs);
  }
  sum_g = block_sum(sum_g, shared);
  sum_gn = block_sum(sum_gn, shared);
  if (threadIdx.x == 0) {
    if (dweight != nullptr) dweight[c] += static_cast<float>(sum_gn);
    if (dbias != nullptr) dbias[c] += static_cast<float>(sum_g);
  }
  if (dinp == nullptr) return;
  // dinp = w * rstd * (dout - mean(dout) - norm * mean(dout * norm)).
  const float w = weight != nullptr ? weight[c] : 1.0f;
  const float k = w * rs;
  const auto a = static_cast<float>(sum_g / static_cast<double>(M));
  const auto bnorm = static_cast<float>(sum_gn / static_cast<double>(M));
  for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) {
    const std::size_t i = at(m);
    dinp[i] += k * (dout[i] - a - (inp[i] - mn) * rs * bnorm);
  }
}

// ---- pooling --------------------------------------------------------------------------------------

struct PoolDims {
  int H, W, OH, OW, k, stride, pad;
};

PoolDims pool_dims(const Pool2dShape& s) {
  return PoolDims{s.H, s.W, s.OH(), s.OW(), s.k, s.stride, s.pad};
}

// Output rows (or columns) whose window contains input row ih: oh*stride - pad <= ih <= oh*stride - pad + k
// - 1.
__device__ inline void window_range(int ih, int k, int stride, int pad, int OH, int& lo, int& hi) {
  const int top = ih + pad - k + 1;  // smallest oh*stride allowed
  lo = top <= 0 ? 0 : (top + stride - 1) / stride;
  hi = min(OH - 1, (ih + pad) / stride);
}

// One thread per output element; the first maximum in row-major window order wins, NaN propagates.
__global__ void maxpool_forward_kernel(float* __restrict__ out, int32_t* __restrict__ argmax,
                                       const float* __restrict__ inp, std::size_t total, PoolDims d) {
  const std::size_t out_plane = static_cast<std::size_t>(d.OH) * d.OW;
  for (std::size_t o = global_index(); o < total; o += global_stride()) {
    const std::size_t p = o / out_plane;
    const auto oh = static_cast<int>(o % out_plane / d.OW);
    const auto ow = static_cast<int>(o % d.OW);
    const float* x = inp + p * d.H * d.W;  // (H, W)
    float best = -INFINITY;
    int32_t where = -1;
    // The CPU backend's loop, literally (including which NaN wins when a window holds several).
    for (int kh = 0; kh < d.k; ++kh) {
      const int ih = oh * d.stride - d.pad + kh;
      if (ih < 0 || ih >= d.H) continue;
      for (int kw = 0; kw < d.k; ++kw) {
        const int iw = ow * d.stride - d.pad + kw;
        if (iw < 0 || iw >= d.W) continue;
        const float v = x[ih * d.W + iw];
        if (where < 0 || v > best || isnan(v)) {
          best = v;
          where = ih * d.W + iw;
          if (isnan(v)) break;
        }
      }
    }
    out[o] = best;
    argmax[o] = where;
  }
}

// dinp (B, C, H, W) += dout routed through argmax; one thread per input element.
__global__ void maxpool_backward_kernel(float* dinp, const float* __restrict__ dout,
                                        const int32_t* __restrict__ argmax, std::size_t total, PoolDims d) {
  const std::size_t in_plane = static_cast<std::size_t>(d.H) * d.W;
  const std::size_t out_plane = static_cast<std::size_t>(d.OH) * d.OW;
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const std::size_t p = i / in_plane;
    const auto idx = static_cast<int32_t>(i % in_plane);
    const int ih = idx / d.W;
    const int iw = idx % d.W;
    int oh0, oh1, ow0, ow1;
    window_range(ih, d.k, d.stride, d.pad, d.OH, oh0, oh1);
    window_range(iw, d.k, d.stride, d.pad, d.OW, ow0, ow1);
    const float* g = dout + p * out_plane;
    const int32_t* am = argmax + p * out_plane;
    float acc = dinp[i];
    for (int oh = oh0; oh <= oh1; ++oh) {
      for (int ow = ow0; ow <= ow1; ++ow) {
        if (am[oh * d.OW + ow] == idx) acc += g[oh * d.OW + ow];
      }
    }
    dinp[i] = acc;
  }
}

// count_include_pad: every window divides by k*k.
__global__ void avgpool_forward_kernel(float* __restrict__ out, const float* __restrict__ inp,
                                       std::size_t total, PoolDims d) {
  const std::size_t out_plane = static_cast<std::size_t>(d.OH) * d.OW;
  const float inv = 1.0f / static_cast<float>(d.k * d.k);
  for (std::size_t o = global_index(); o < total; o += global_stride()) {
    const std::size_t p = o / out_plane;
    const auto oh = static_cast<int>(o % out_plane / d.OW);
    const auto ow = static_cast<int>(o % d.OW);
    const float* x = inp + p * d.H * d.W;  // (H, W)
    float acc = 0.0f;
    for (int kh = 0; kh < d.k; ++kh) {
      const int ih = oh * d.stride - d.pad + kh;
      if (ih < 0 || ih >= d.H) continue;
      for (int kw = 0; kw < d.k; ++kw) {
        const int iw = ow * d.stride - d.pad + kw;
        if (iw >= 0 && iw < d.W) acc += x[ih * d.W + iw];
      }
    }
    out[o] = acc * inv;
  }
}

__global__ void avgpool_backward_kernel(float* dinp, const float* __restrict__ dout, std::size_t total,
                                        PoolDims d) {
  const std::size_t in_plane = static_cast<std::size_t>(d.H) * d.W;
  const std::size_t out_plane = static_cast<std::size_t>(d.OH) * d.OW;
  const float inv = 1.0f / static_cast<float>(d.k * d.k);
  for (std::size_t i = global_index(); i < total; i += global_stride()) {
    const std::size_t p = i / in_plane;
    const auto ih = static_cast<int>(i % in_plane / d.W);
    const auto iw = static_cast<int>(i % d.W);
    int oh0, oh1, ow0, ow1;
    window_range(ih, d.k, d.stride, d.pad, d.OH, oh0, oh1);
    window_range(iw, d.k, d.stride, d.pad, d.OW, ow0, ow1);
    const float* g = dout + p * out_plane;
    float acc = dinp[i];
    for (int oh = oh0; oh <= oh1; ++oh) {
      for (int ow = ow0; ow <= ow1; ++ow) acc += g[oh * d.OW + ow] * inv;
    }
    dinp[i] = acc;
  }
}

// out (P) = mean over HW of inp (P, HW), P = B*C: one warp per plane, double sum.
__global__ void global_avgpool_forward_kernel(float* __restrict__ out, const float* __restrict__ inp,
                                              std::size_t planes, int HW) {
  const int lane = threadIdx.x & 31;
  const std::size_t p = static_cast<std::size_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (p >= planes) return;
  const float* x = inp + p * HW;
  double acc = 0.0;
  for (int i = lane; i < HW; i += 32) acc += static_cast<double>(x[i]);
  acc = warp_sum(acc);
  if (lane == 0) out[p] = static_cast<float>(acc / HW);
}

__global__ void global_avgpool_backward_kernel(float* dinp, const float* __restrict__ dout, std::size_t total,
                                               int HW) {
  const float inv = 1.0f / static_cast<float>(HW);
  for (std::size_t i = global_index(); i < total; i += global_stride()) dinp[i] += dout[i / HW] * inv;
}

}  // namespace

void CudaBackend::batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean,
                                    float* running_var, const float* inp, const float* weight,
                                    const float* bias, int B, int C, int HW, float momentum, float eps,
                                    bool training) {
  const std::size_t M = static_cast<std::size_t>(B) * HW;
  if (training && M < 2) {
    throw InputError("batchnorm: training needs more than one value per channel (B*H*W = " +
                     std::to_string(M) + "); use a larger batch");
  }
  if (!training && (running_mean == nullptr || running_var == nullptr)) {
    throw InputError("batchnorm: evaluation mode needs running_mean and running_var");
  }
  if (C == 0 || M == 0) return;
  batchnorm_forward_kernel<<<static_cast<unsigned>(C), kBnThreads, 0, stream()>>>(
      out, mean, rstd, running_mean, running_var, inp, weight, bias, B, C, HW, momentum, eps, training);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int B, int C, int HW) {
  if (C == 0 || B == 0 || HW == 0) return;
  batchnorm_backward_kernel<<<static_cast<unsigned>(C), kBnThreads, 0, stream()>>>(
      dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, C, HW);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::maxpool2d_forward(float* out, int32_t* argmax, const float* inp, const Pool2dShape& s) {
  check_pool_shape(s, "maxpool2d");
  const std::size_t total = static_cast<std::size_t>(s.B) * s.C * s.OH() * s.OW();
  maxpool_forward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(out, argmax, inp, total, pool_dims(s));
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::maxpool2d_backward(float* dinp, const float* dout, const int32_t* argmax,
                                     const Pool2dShape& s) {
  check_pool_shape(s, "maxpool2d");
  const std::size_t total = static_cast<std::size_t>(s.B) * s.C * s.H * s.W;
  if (total == 0) return;
  maxpool_backward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(dinp, dout, argmax, total,
                                                                      pool_dims(s));
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::avgpool2d_forward(float* out, const float* inp, const Pool2dShape& s) {
  check_pool_shape(s, "avgpool2d");
  const std::size_t total = static_cast<std::size_t>(s.B) * s.C * s.OH() * s.OW();
  avgpool_forward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(out, inp, total, pool_dims(s));
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::avgpool2d_backward(float* dinp, const float* dout, const Pool2dShape& s) {
  check_pool_shape(s, "avgpool2d");
  const std::size_t total = static_cast<std::size_t>(s.B) * s.C * s.H * s.W;
  if (total == 0) return;
  avgpool_backward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(dinp, dout, total, pool_dims(s));
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::global_avgpool_forward(float* out, const float* inp, int B, int C, int HW) {
  const std::size_t planes = static_cast<std::size_t>(B) * C;
  if (planes == 0) return;
  global_avgpool_forward_kernel<<<grid_for_warps(planes), kThreads, 0, stream()>>>(out, inp, planes, HW);
  TT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::global_avgpool_backward(float* dinp, const float* dout, int B, int C, int HW) {
  const std::size_t total = static_cast<std::size_t>(B) * C * HW;
  if (total == 0) return;
  global_avgpool_backward_kernel<<<grid_for(total), kThreads, 0, stream()>>>(dinp, dout, total, HW);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
