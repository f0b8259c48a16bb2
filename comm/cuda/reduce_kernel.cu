#include <algorithm>

#include "comm/cuda/cuda_util.h"
#include "comm/cuda/reduce_kernel.h"

namespace tt::comm::cuda {

namespace {

// Grid-stride loop: a bounded grid covers any n (segments reach hundreds of millions of floats).
__global__ void add_into_kernel(float* __restrict__ dst, const float* __restrict__ src, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = __fadd_rn(dst[i], src[i]);  // explicit round-to-nearest add: never contracted or reassociated
  }
}

}  // namespace

void launch_add_into(float* dst, const float* src, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kMaxBlocks = 4096;  // enough to fill an H100/H200 many times over
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
  add_into_kernel<<<blocks, kThreads, 0, stream>>>(dst, src, n);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::comm::cuda
