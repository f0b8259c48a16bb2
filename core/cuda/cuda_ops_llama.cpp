// CUDA backend: the Llama ops. Grouped-query attention with one query head per key/value head is
// attention_forward/backward's kernels; RMSNorm, rotary embeddings, SwiGLU and shared key/value heads have
// no kernels yet, so a Llama on CUDA stops at its first such op with a message saying so (the CPU and
// emulated backends run them).
#include <string>

#include "base/error.h"
#include "core/cuda/cuda_backend_impl.h"

namespace tt::cuda {

namespace {

[[noreturn]] void not_yet(const std::string& op) {
  throw InputError("cuda backend: " + op +
                   " is not yet on CUDA (Llama models train on --device cpu or --compute emulate)");
}

}  // namespace

void CudaBackend::rmsnorm_forward(float*, float*, const float*, const float*, int, int, float) {
  not_yet("rmsnorm_forward");
}
void CudaBackend::rmsnorm_backward(float*, float*, const float*, const float*, const float*, const float*,
                                   int, int) {
  not_yet("rmsnorm_backward");
}
void CudaBackend::rope_forward(float*, int, int, int, int, int, float) {
  not_yet("rope_forward");
}
void CudaBackend::rope_backward(float*, int, int, int, int, int, float) {
  not_yet("rope_backward");
}
void CudaBackend::swiglu_forward(float*, const float*, int, int) {
  not_yet("swiglu_forward");
}
void CudaBackend::swiglu_backward(float*, const float*, const float*, int, int) {
  not_yet("swiglu_backward");
}

void CudaBackend::gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH,
                                        int NKV, int HS, AttentionMask mask) {
  if (NKV != NH) not_yet("grouped-query attention with fewer key/value heads than query heads");
  attention_forward(out, att, qkv, B, T, NH * HS, NH, mask);
}

void CudaBackend::gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout,
                                         const float* qkv, const float* att, int B, int T, int NH, int NKV,
                                         int HS, AttentionMask mask) {
  if (NKV != NH) not_yet("grouped-query attention with fewer key/value heads than query heads");
  attention_backward(dqkv, datt_scratch, dout, qkv, att, B, T, NH * HS, NH, mask);
}

}  // namespace tt::cuda
