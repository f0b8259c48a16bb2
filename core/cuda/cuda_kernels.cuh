// Device-side helpers shared by the CUDA op files: launch sizes and fixed-order reductions.
//
// Determinism: every reduction here combines values in an order fixed by the launch shape alone.
// The xor-butterfly warp sum leaves the same bits in every lane (each step adds a pair of lanes, and
// a + b == b + a exactly), and block_sum combines the per-warp sums the same way in every warp.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace tt::cuda {

inline constexpr int kThreads = 256;           // default block size for elementwise kernels
inline constexpr unsigned kMaxBlocks = 65536;  // grid-stride loops cover the rest

// Blocks for a grid-stride loop over n elements (n > 0).
inline unsigned grid_for(std::size_t n, int threads = kThreads) {
  const std::size_t blocks = (n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
  return static_cast<unsigned>(std::min<std::size_t>(blocks, kMaxBlocks));
}

// Blocks for one-item-per-warp kernels (rows of layernorm, attention softmax) with kThreads per block.
inline unsigned grid_for_warps(std::size_t items) {
  constexpr std::size_t kWarps = kThreads / 32;
  return static_cast<unsigned>((items + kWarps - 1) / kWarps);
}

// Rows per chunk of the deterministic column sums (layernorm's and RMSNorm's weight gradients, bias
// gradients): at most 256 chunks of at least 32 rows, a partition that depends on N alone.
inline int rows_per_chunk(int N) {
  constexpr int kMaxChunks = 256;
  return std::max(32, (N + kMaxChunks - 1) / kMaxChunks);
}

template <typename T>
__device__ inline T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum of v over the block, returned to every thread. blockDim.x must be a multiple of 32 (<= 1024);
// `shared` holds 32 T. Safe to call repeatedly with the same `shared`.
template <typename T>
__device__ inline T block_sum(T v, T* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // a previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T t = lane < nwarps ? shared[lane] : T(0);
  return warp_sum(t);
}

__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float t = lane < nwarps ? shared[lane] : -INFINITY;
  return warp_max(t);
}

// Global thread index and stride of a 1-D grid-stride loop.
__device__ inline std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t global_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

}  // namespace tt::cuda
