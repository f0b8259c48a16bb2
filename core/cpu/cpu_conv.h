// CPU backend: the two implementations of 2-D convolution behind CpuBackend::conv2d_*.
//
//  - im2col + OpenBLAS sgemm (cpu_conv_im2col.cpp): the reference. Always built; used when teetrain
//    is built without oneDNN and by the tests that check the oneDNN path against it.
//  - oneDNN (cpu_conv_dnnl.cpp, when CMake found libdnnl): the library PyTorch uses on CPUs, with its
//    blocked-layout JIT kernels. NCHW stays the interface: the ops reorder into oneDNN's blocked
//    layouts inside the call, into the caller's workspace.
//
// Both follow backend.h's contract: backward accumulates into dinp, dweight and dbias, and results
// are bit-identical run to run for a fixed thread count.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/backend.h"

namespace tt::cpu {

// ---- reference: im2col + sgemm --------------------------------------------------------------------

std::size_t im2col_conv_workspace_floats(const Conv2dShape& s);
void im2col_conv_forward(float* out, const float* inp, const float* weight, const float* bias,
                         float* workspace, const Conv2dShape& s, int threads);
void im2col_conv_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, float* workspace, const Conv2dShape& s, int threads);

// dbias (OC) += sum over (B, OH, OW) of dout (B, OC, OH, OW): one sequential double sum per channel,
// so the result does not depend on the thread count.
void conv_bias_backward(float* dbias, const float* dout, const Conv2dShape& s, int threads);

// ---- oneDNN ---------------------------------------------------------------------------------------

// True when this build links oneDNN (otherwise DnnlConv's methods throw RunError).
bool dnnl_available();
// "oneDNN 2.6.3 (cpu runtime omp, isa avx2)" or "not built".
std::string dnnl_describe();

// oneDNN convolutions for one thread count. Primitives (convolution and the reorders around it) are
// created once per shape, at the first call that sees the shape, and cached: a ResNet has about a dozen
// distinct conv shapes. The algorithm is pinned to convolution_direct (no Winograd: it is not
// bit-compatible with direct and oneDNN may pick it by shape), and every primitive is created and run
// with `threads` OpenMP threads, so oneDNN's work partition -- and therefore the order of its sums --
// is the same in every run.
class DnnlConv {
 public:
  explicit DnnlConv(int threads);
  ~DnnlConv();
  DnnlConv(const DnnlConv&) = delete;
  DnnlConv& operator=(const DnnlConv&) = delete;

  std::size_t workspace_floats(const Conv2dShape& s);
  void forward(float* out, const float* inp, const float* weight, const float* bias, float* workspace,
               const Conv2dShape& s);
  void backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                const float* weight, float* workspace, const Conv2dShape& s);
  // The oneDNN implementation names chosen for s, e.g. "fwd jit:avx2, bwd_d jit:avx2, bwd_w jit:avx2".
  std::string implementations(const Conv2dShape& s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tt::cpu
