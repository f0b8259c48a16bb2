// CUDA backend: 2-D convolution through cuDNN (NCHW, FP32), deterministic algorithms only.
//
// Descriptors and algorithm choices are cached per shape (ConvPlan). Each direction tries the
// deterministic algorithms in a fixed order of preference: the GEMM-based ones first (precise, and
// the same algorithm for every shape, so a step's time follows from its shapes), then Winograd/FFT
// variants (deterministic but less precise) only where cuDNN reports the former unsupported. TF32
// tensor cores are allowed (CUDNN_DEFAULT_MATH) only when the backend was created with tf32;
// otherwise CUDNN_FMA_MATH keeps full FP32 arithmetic.
//
// The workspace is the backend's own (grown to the largest need seen), so conv2d_workspace_floats
// returns 0 and the caller's workspace argument is unused.
#include <string>

#include "base/error.h"
#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_kernels.cuh"
#include "core/shape_checks.h"

namespace tt::cuda {

namespace {

constexpr cudnnConvolutionFwdAlgo_t kFwdAlgos[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_FFT};
// ALGO_0 of both backward directions (and filter ALGO_3) use atomics: never listed.
constexpr cudnnConvolutionBwdDataAlgo_t kBwdDataAlgos[] = {
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT};
constexpr cudnnConvolutionBwdFilterAlgo_t kBwdFilterAlgos[] = {
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT};

TensorDescPtr make_tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t d = nullptr;
  TT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  TensorDescPtr owned(d);
  TT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return owned;
}

bool not_supported(cudnnStatus_t st) {
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED;
}

// Runs candidate `at` of `cands`, moving on to the next one while cuDNN answers "not supported".
template <typename Algo, typename Run>
void run_first_supported(std::vector<std::pair<Algo, std::size_t>>& cands, std::size_t& at, const char* what,
                         const Conv2dShape& s, Run run) {
  cudnnStatus_t last = CUDNN_STATUS_SUCCESS;
  for (;;) {
    if (at >= cands.size()) {
      throw RunError(std::string("cudnn: no deterministic ") + what + " algorithm supports conv " +
                     shape_string(s) +
                     (cands.empty() ? std::string(" (every workspace-size query failed)")
                                    : std::string(" (last status: ") + cudnnGetErrorString(last) + ")"));
    }
    last = run(cands[at].first, cands[at].second);
    if (not_supported(last)) {
      ++at;
      continue;
    }
    check_cudnn(last, what, __FILE__, __LINE__);
    return;
  }
}

// out (B, OC, OHW) += bias (OC).
__global__ void conv_bias_kernel(float* __restrict__ out, const float* __restrict__ bias, std::size_t total,
                                 int OC, std::size_t OHW) {
  for (std::size_t i = global_index(); i < total; i += global_stride()) out[i] += bias[(i / OHW) % OC];
}

// dbias (C) += sum over (B, HW) of dout (B, C, HW): one block per channel, fixed-order double sum.
__global__ void channel_sum_kernel(float* __restrict__ dbias, const float* __restrict__ dout, int B, int C,
                                   int HW) {
  __shared__ double shared[32];
  const int c = static_cast<int>(blockIdx.x);
  const std::size_t M = static_cast<std::size_t>(B) * HW;
  double acc = 0.0;
  for (std::size_t m = threadIdx.x; m < M; m += blockDim.x) {
    const std::size_t b = m / HW;
    const std::size_t i = m % HW;
    acc += static_cast<double>(dout[(b * C + c) * HW + i]);
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) dbias[c] += static_cast<float>(acc);
}

}  // namespace

ConvPlan& CudaBackend::conv_plan(const Conv2dShape& s) {
  const std::array<int, 9> key = {s.B, s.IC, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad};
  auto found = conv_plans_.find(key);
  if (found != conv_plans_.end()) return *found->second;

  auto plan = std::make_unique<ConvPlan>();
  plan->x = make_tensor(s.B, s.IC, s.H, s.W);
  plan->y = make_tensor(s.B, s.OC, s.OH(), s.OW());
  cudnnFilterDescriptor_t w = nullptr;
  TT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
  plan->w.reset(w);
  TT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.OC, s.IC, s.KH, s.KW));
  cudnnConvolutionDescriptor_t conv = nullptr;
  TT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  plan->conv.reset(conv);
  TT_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, s.stride, s.stride, 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TT_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));

  // Our output size formula must be cuDNN's, or the kernels would read and write the wrong extents.
  int n = 0, c = 0, h = 0, wd = 0;
  TT_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv, plan->x.get(), w, &n, &c, &h, &wd));
  if (n != s.B || c != s.OC || h != s.OH() || wd != s.OW()) {
    throw RunError("cudnn: output shape " + std::to_string(n) + "x" + std::to_string(c) + "x" +
                   std::to_string(h) + "x" + std::to_string(wd) + " differs from the backend's for conv " +
                   shape_string(s));
  }

  cudnnHandle_t hd = cudnn();
  for (const auto algo : kFwdAlgos) {
    std::size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(hd, plan->x.get(), w, conv, plan->y.get(), algo, &bytes) ==
        CUDNN_STATUS_SUCCESS)
      plan->fwd.emplace_back(algo, bytes);
  }
  for (const auto algo : kBwdDataAlgos) {
    std::size_t bytes = 0;
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(hd, w, plan->y.get(), conv, plan->x.get(), algo,
                                                     &bytes) == CUDNN_STATUS_SUCCESS)
      plan->bwd_data.emplace_back(algo, bytes);
  }
  for (const auto algo : kBwdFilterAlgos) {
    std::size_t bytes = 0;
    if (cudnnGetConvolutionBackwardFilterWorkspaceSize(hd, plan->x.get(), plan->y.get(), conv, w, algo,
                                                       &bytes) == CUDNN_STATUS_SUCCESS)
      plan->bwd_filter.emplace_back(algo, bytes);
  }
  return *conv_plans_.emplace(key, std::move(plan)).first->second;
}

std::size_t CudaBackend::conv2d_workspace_floats(const Conv2dShape& s) const {
  check_conv_shape(s);
  return 0;  // the backend keeps its own cuDNN workspace
}

void CudaBackend::conv2d_forward(float* out, const float* inp, const float* weight, const float* bias,
                                 float* /*workspace*/, const Conv2dShape& s) {
  check_conv_shape(s);
  ConvPlan& p = conv_plan(s);
  const float one = 1.0f;
  const float zero = 0.0f;
  run_first_supported(p.fwd, p.fwd_at, "cudnnConvolutionForward", s,
                      [&](cudnnConvolutionFwdAlgo_t algo, std::size_t bytes) {
                        void* ws = bytes > 0 ? conv_workspace_.get(bytes, stream()) : nullptr;
                        return cudnnConvolutionForward(cudnn(), &one, p.x.get(), inp, p.w.get(), weight,
                                                       p.conv.get(), algo, ws, bytes, &zero, p.y.get(), out);
                      });
  if (bias != nullptr) {
    const std::size_t OHW = static_cast<std::size_t>(s.OH()) * s.OW();
    const std::size_t total = static_cast<std::size_t>(s.B) * s.OC * OHW;
    conv_bias_kernel<<<grid_for(total), kThreads, 0, stream()>>>(out, bias, total, s.OC, OHW);
    TT_CUDA_CHECK_LAUNCH();
  }
}

void CudaBackend::conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, float* /*workspace*/,
                                  const Conv2dShape& s) {
  check_conv_shape(s);
  ConvPlan& p = conv_plan(s);
  const float one = 1.0f;  // alpha = beta = 1: every gradient accumulates (+=)
  if (dbias != nullptr) {
    channel_sum_kernel<<<static_cast<unsigned>(s.OC), kThreads, 0, stream()>>>(dbias, dout, s.B, s.OC,
                                                                               s.OH() * s.OW());
    TT_CUDA_CHECK_LAUNCH();
  }
  if (dweight != nullptr) {
    run_first_supported(p.bwd_filter, p.bwd_filter_at, "cudnnConvolutionBackwardFilter", s,
                        [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t bytes) {
                          void* ws = bytes > 0 ? conv_workspace_.get(bytes, stream()) : nullptr;
                          return cudnnConvolutionBackwardFilter(cudnn(), &one, p.x.get(), inp, p.y.get(),
                                                                dout, p.conv.get(), algo, ws, bytes, &one,
                                                                p.w.get(), dweight);
                        });
  }
  if (dinp != nullptr) {
    run_first_supported(p.bwd_data, p.bwd_data_at, "cudnnConvolutionBackwardData", s,
                        [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t bytes) {
                          void* ws = bytes > 0 ? conv_workspace_.get(bytes, stream()) : nullptr;
                          return cudnnConvolutionBackwardData(cudnn(), &one, p.w.get(), weight, p.y.get(),
                                                              dout, p.conv.get(), algo, ws, bytes, &one,
                                                              p.x.get(), dinp);
                        });
  }
}

}  // namespace tt::cuda
