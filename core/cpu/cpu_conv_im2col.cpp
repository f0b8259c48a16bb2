// CPU backend: 2-D convolution as im2col + OpenBLAS sgemm -- the reference implementation (cpu_conv.h).
//
// The batch is processed in chunks of Bc images whose size depends only on the shape (never on the
// thread count), so the order of every accumulation is fixed. For one chunk with N = Bc * OH * OW
// output positions and K = IC * KH * KW:
//   col  (K, N)   im2col of the input chunk (zero padding)
//   gat  (OC, N)  forward: weight (OC, K) @ col, then scattered into out (B, OC, OH, OW) with the bias;
//                 backward: dout gathered into this layout
//   dcol (K, N)   backward: weight^T @ gat, then added back into dinp by col2im
// One gemm per chunk instead of one per image keeps the matrices large for the small spatial sizes of
// the late ResNet stages (2x2, 1x1 at 32x32 input), where per-image gemms would be tiny.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "core/cpu/cpu_common.h"
#include "core/cpu/cpu_conv.h"
#include "core/shape_checks.h"

namespace tt::cpu {

namespace {

// Upper bound (floats) on the workspace one chunk may use, unless a single image needs more.
constexpr std::size_t kChunkFloats = std::size_t{1} << 22;  // 16 MiB

struct ConvDims {
  std::ptrdiff_t K;    // IC * KH * KW
  std::ptrdiff_t OHW;  // OH * OW
  int Bc;              // images per chunk
  std::ptrdiff_t N() const { return static_cast<std::ptrdiff_t>(Bc) * OHW; }
};

ConvDims conv_dims(const Conv2dShape& s) {
  check_conv_shape(s);
  ConvDims d{};
  d.K = static_cast<std::ptrdiff_t>(s.IC) * s.KH * s.KW;
  d.OHW = static_cast<std::ptrdiff_t>(s.OH()) * s.OW();
  const auto per_image = static_cast<std::size_t>(d.OHW * (2 * d.K + s.OC));
  d.Bc =
      static_cast<int>(std::clamp<std::size_t>(kChunkFloats / per_image, 1, static_cast<std::size_t>(s.B)));
  return d;
}

// col (K, Bc*OHW) <- im2col of images [b0, b0 + Bc) of inp (B, IC, H, W).
void im2col(float* col, const float* inp, const Conv2dShape& s, const ConvDims& d, int b0, int threads) {
  const int OH = s.OH();
  const int OW = s.OW();
  const std::ptrdiff_t N = d.N();
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
#pragma omp parallel for num_threads(threads) schedule(static) if (d.K * N >= kParallelMin)
  for (std::ptrdiff_t k = 0; k < d.K; ++k) {
    const int kw = static_cast<int>(k % s.KW);
    const int kh = static_cast<int>((k / s.KW) % s.KH);
    const auto ic = static_cast<std::ptrdiff_t>(k / (static_cast<std::ptrdiff_t>(s.KW) * s.KH));
    float* __restrict row = col + k * N;
    for (int bl = 0; bl < d.Bc; ++bl) {
      const float* __restrict x = inp + (static_cast<std::ptrdiff_t>(b0 + bl) * s.IC + ic) * plane;  // (H, W)
      float* __restrict r = row + bl * d.OHW;  // (OH, OW)
      for (int oh = 0; oh < OH; ++oh) {
        const int ih = oh * s.stride - s.pad + kh;
        float* __restrict ro = r + static_cast<std::ptrdiff_t>(oh) * OW;
        if (ih < 0 || ih >= s.H) {
          std::fill(ro, ro + OW, 0.0f);
          continue;
        }
        const float* __restrict xr = x + static_cast<std::ptrdiff_t>(ih) * s.W;
        if (s.stride == 1) {
          // iw = ow - pad + kw: a contiguous run clipped at both edges.
          const int lo = std::clamp(s.pad - kw, 0, OW);
          const int hi = std::clamp(s.W + s.pad - kw, lo, OW);
          std::fill(ro, ro + lo, 0.0f);
          std::memcpy(ro + lo, xr + lo - s.pad + kw, static_cast<std::size_t>(hi - lo) * sizeof(float));
          std::fill(ro + hi, ro + OW, 0.0f);
        } else {
          for (int ow = 0; ow < OW; ++ow) {
            const int iw = ow * s.stride - s.pad + kw;
            ro[ow] = (iw >= 0 && iw < s.W) ? xr[iw] : 0.0f;
          }
        }
      }
    }
  }
}

// dinp (B, IC, H, W) += col2im(dcol (K, Bc*OHW)) for images [b0, b0 + Bc). Each thread owns whole
// (image, channel) planes and adds the KH*KW rows in a fixed order: no races, deterministic.
void col2im_add(float* dinp, const float* dcol, const Conv2dShape& s, const ConvDims& d, int b0,
                int threads) {
  const int OH = s.OH();
  const int OW = s.OW();
  const std::ptrdiff_t N = d.N();
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(s.H) * s.W;
  const std::ptrdiff_t planes = static_cast<std::ptrdiff_t>(d.Bc) * s.IC;
#pragma omp parallel for num_threads(threads) schedule(static) if (d.K * N >= kParallelMin)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const auto bl = static_cast<int>(p / s.IC);
    const auto ic = static_cast<int>(p % s.IC);
    float* __restrict dx = dinp + (static_cast<std::ptrdiff_t>(b0 + bl) * s.IC + ic) * plane;  // (H, W)
    for (int kh = 0; kh < s.KH; ++kh) {
      for (int kw = 0; kw < s.KW; ++kw) {
        const std::ptrdiff_t k = (static_cast<std::ptrdiff_t>(ic) * s.KH + kh) * s.KW + kw;
        const float* __restrict r = dcol + k * N + bl * d.OHW;  // (OH, OW)
        for (int oh = 0; oh < OH; ++oh) {
          const int ih = oh * s.stride - s.pad + kh;
          if (ih < 0 || ih >= s.H) continue;
          float* __restrict dxr = dx + static_cast<std::ptrdiff_t>(ih) * s.W;
          const float* __restrict ro = r + static_cast<std::ptrdiff_t>(oh) * OW;
          if (s.stride == 1) {
            const int lo = std::clamp(s.pad - kw, 0, OW);
            const int hi = std::clamp(s.W + s.pad - kw, lo, OW);
            float* __restrict t = dxr - s.pad + kw;
            for (int ow = lo; ow < hi; ++ow) t[ow] += ro[ow];
          } else {
            for (int ow = 0; ow < OW; ++ow) {
              const int iw = ow * s.stride - s.pad + kw;
              if (iw >= 0 && iw < s.W) dxr[iw] += ro[ow];
            }
          }
        }
      }
    }
  }
}

// OpenBLAS keeps its thread count process-wide: re-assert ours before each sgemm.
void use_blas_threads(int threads) {
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

}  // namespace

std::size_t im2col_conv_workspace_floats(const Conv2dShape& s) {
  const ConvDims d = conv_dims(s);
  return static_cast<std::size_t>(d.N() * (2 * d.K + s.OC));
}

void im2col_conv_forward(float* out, const float* inp, const float* weight, const float* bias,
                         float* workspace, const Conv2dShape& s, int threads) {
  const ConvDims d = conv_dims(s);
  const std::ptrdiff_t N = d.N();
  float* col = workspace;      // (K, N)
  float* gat = col + d.K * N;  // (OC, N)
  for (int b0 = 0; b0 < s.B; b0 += d.Bc) {
    const int bc = std::min(d.Bc, s.B - b0);
    ConvDims dc = d;
    dc.Bc = bc;
    const std::ptrdiff_t n = dc.N();
    im2col(col, inp, s, dc, b0, threads);
    use_blas_threads(threads);
    // gat (OC, n) = weight (OC, K) @ col (K, n)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.OC, static_cast<int>(n), static_cast<int>(d.K),
                1.0f, weight, static_cast<int>(d.K), col, static_cast<int>(n), 0.0f, gat,
                static_cast<int>(n));
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(bc) * s.OC;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * d.OHW >= kParallelMin)
    for (std::ptrdiff_t r = 0; r < rows; ++r) {
      const auto bl = r / s.OC;
      const auto oc = r % s.OC;
      const float* __restrict g = gat + oc * n + bl * d.OHW;                                     // (OHW)
      float* __restrict o = out + ((b0 + bl) * static_cast<std::ptrdiff_t>(s.OC) + oc) * d.OHW;  // (OHW)
      const float bv = bias != nullptr ? bias[oc] : 0.0f;
      for (std::ptrdiff_t i = 0; i < d.OHW; ++i) o[i] = g[i] + bv;
    }
  }
}

void im2col_conv_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, float* workspace, const Conv2dShape& s, int threads) {
  const ConvDims d = conv_dims(s);
  const std::ptrdiff_t N = d.N();
  float* col = workspace;        // (K, N)
  float* gat = col + d.K * N;    // (OC, N)
  float* dcol = gat + s.OC * N;  // (K, N)
  for (int b0 = 0; b0 < s.B; b0 += d.Bc) {
    const int bc = std::min(d.Bc, s.B - b0);
    ConvDims dc = d;
    dc.Bc = bc;
    const std::ptrdiff_t n = dc.N();
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(bc) * s.OC;
    // gat (OC, n) <- dout images [b0, b0 + bc) (bc, OC, OHW)
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * d.OHW >= kParallelMin)
    for (std::ptrdiff_t r = 0; r < rows; ++r) {
      const auto bl = r / s.OC;
      const auto oc = r % s.OC;
      std::memcpy(gat + oc * n + bl * d.OHW,
                  dout + ((b0 + bl) * static_cast<std::ptrdiff_t>(s.OC) + oc) * d.OHW,
                  static_cast<std::size_t>(d.OHW) * sizeof(float));
    }
    if (dbias != nullptr) {
      // One sequential double sum per channel and chunk: deterministic for any thread count.
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * d.OHW >= kParallelMin)
      for (int oc = 0; oc < s.OC; ++oc) {
        const float* __restrict g = gat + static_cast<std::ptrdiff_t>(oc) * n;
        double acc = 0.0;
        for (std::ptrdiff_t i = 0; i < n; ++i) acc += static_cast<double>(g[i]);
        dbias[oc] += static_cast<float>(acc);
      }
    }
    use_blas_threads(threads);
    if (dweight != nullptr) {
      im2col(col, inp, s, dc, b0, threads);
      use_blas_threads(threads);
      // dweight (OC, K) += gat (OC, n) @ col (K, n)^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.OC, static_cast<int>(d.K), static_cast<int>(n),
                  1.0f, gat, static_cast<int>(n), col, static_cast<int>(n), 1.0f, dweight,
                  static_cast<int>(d.K));
    }
    if (dinp != nullptr) {
      // dcol (K, n) = weight (OC, K)^T @ gat (OC, n)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(d.K), static_cast<int>(n), s.OC,
                  1.0f, weight, static_cast<int>(d.K), gat, static_cast<int>(n), 0.0f, dcol,
                  static_cast<int>(n));
      col2im_add(dinp, dcol, s, dc, b0, threads);
    }
  }
}

void conv_bias_backward(float* dbias, const float* dout, const Conv2dShape& s, int threads) {
  const std::ptrdiff_t OHW = static_cast<std::ptrdiff_t>(s.OH()) * s.OW();
  const std::ptrdiff_t CHW = OHW * s.OC;
#pragma omp parallel for num_threads(threads) schedule(static) if (CHW * s.B >= kParallelMin)
  for (int oc = 0; oc < s.OC; ++oc) {
    double acc = 0.0;
    for (int b = 0; b < s.B; ++b) {
      const float* __restrict g = dout + b * CHW + oc * OHW;  // (OH, OW)
      for (std::ptrdiff_t i = 0; i < OHW; ++i) acc += static_cast<double>(g[i]);
    }
    dbias[oc] += static_cast<float>(acc);
  }
}

}  // namespace tt::cpu
