// CPU backend: 2-D convolution, dispatched to oneDNN (cpu_conv_dnnl.cpp) or to the im2col + sgemm
// reference (cpu_conv_im2col.cpp); see cpu_conv.h.
#include "engine/core/cpu/cpu_backend.h"
#include "engine/core/cpu/cpu_conv.h"
#include "engine/core/shape_checks.h"

namespace tt {

std::size_t CpuBackend::conv2d_workspace_floats(const Conv2dShape& s) const {
  check_conv_shape(s);
  return dnnl_ ? dnnl_->workspace_floats(s) : cpu::im2col_conv_workspace_floats(s);
}

std::string CpuBackend::conv_implementations(const Conv2dShape& s) const {
  check_conv_shape(s);
  return dnnl_ ? dnnl_->implementations(s) : std::string();
}

void CpuBackend::conv2d_forward(float* out, const float* inp, const float* weight, const float* bias,
                                float* workspace, const Conv2dShape& s) {
  check_conv_shape(s);
  if (dnnl_) {
    dnnl_->forward(out, inp, weight, bias, workspace, s);
  } else {
    cpu::im2col_conv_forward(out, inp, weight, bias, workspace, s, threads_);
  }
}

void CpuBackend::conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, float* workspace,
                                 const Conv2dShape& s) {
  check_conv_shape(s);
  if (dnnl_) {
    dnnl_->backward(dinp, dweight, dbias, dout, inp, weight, workspace, s);
  } else {
    cpu::im2col_conv_backward(dinp, dweight, dbias, dout, inp, weight, workspace, s, threads_);
  }
}

}  // namespace tt
