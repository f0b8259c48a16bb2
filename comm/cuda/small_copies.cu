#include "comm/cuda/cuda_util.h"
#include "comm/cuda/small_copies.h"

namespace tt::comm::cuda {

namespace {

__global__ void small_copies_kernel(const SmallCopy* __restrict__ descs, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const SmallCopy d = descs[i];
  for (std::uint32_t b = 0; b < d.bytes; ++b) d.dst[b] = d.src[b];
}

}  // namespace

void launch_small_copies(const SmallCopy* descs, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 128;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  small_copies_kernel<<<blocks, kThreads, 0, stream>>>(descs, n);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::comm::cuda
