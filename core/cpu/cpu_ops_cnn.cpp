// CPU backend: 2-D convolution, dispatched to oneDNN (cpu_conv_dnnl.cpp) or to the im2col + sgemm
// reference (cpu_conv_im2col.cpp); see cpu_conv.h.
#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_conv.h"
#include "core/shape_checks.h"

namespace tt {

bool CpuBackend::conv_on_dnnl(const Conv2dShape& s) const {
  if (!dnnl_) return false;
  // Auto leaves small outputs to im2col + sgemm, which makes one gemm of a whole chunk of the batch:
  // measured with bench_conv (2 threads, AVX2 EPYC), oneDNN's blocked kernels lose there -- e.g.
  // ResNet-18's 3x3 512->512 at 1x1 (32x32 input, ImageNet stem) backward 58 ms vs 11 ms, the 3x3/2
  // 256->512 to 4x4 forward 21 vs 16 ms -- and win from 8x8 up (3x3 256->256 at 8x8: 31 vs 46 ms).
  // The choice depends on the shape only, so runs stay bit-identical.
  constexpr int kDnnlMinOutputPixels = 16;
  return conv_ == CpuConv::Dnnl || s.OH() * s.OW() > kDnnlMinOutputPixels;
}

std::size_t CpuBackend::conv2d_workspace_floats(const Conv2dShape& s) const {
  check_conv_shape(s);
  return conv_on_dnnl(s) ? dnnl_->workspace_floats(s) : cpu::im2col_conv_workspace_floats(s);
}

std::string CpuBackend::conv_implementations(const Conv2dShape& s) const {
  check_conv_shape(s);
  return conv_on_dnnl(s) ? dnnl_->implementations(s) : std::string();
}

void CpuBackend::conv2d_forward(float* out, const float* inp, const float* weight, const float* bias,
                                float* workspace, const Conv2dShape& s) {
  check_conv_shape(s);
  if (conv_on_dnnl(s)) {
    dnnl_->forward(out, inp, weight, bias, workspace, s);
  } else {
    cpu::im2col_conv_forward(out, inp, weight, bias, workspace, s, threads_);
  }
}

void CpuBackend::conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, float* workspace,
                                 const Conv2dShape& s) {
  check_conv_shape(s);
  if (conv_on_dnnl(s)) {
    dnnl_->backward(dinp, dweight, dbias, dout, inp, weight, workspace, s);
  } else {
    cpu::im2col_conv_backward(dinp, dweight, dbias, dout, inp, weight, workspace, s, threads_);
  }
}

}  // namespace tt
