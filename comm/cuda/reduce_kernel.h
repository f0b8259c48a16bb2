// The one kernel of the device ring: adding a received scatter-reduce segment into the user's buffer.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace tt::comm::cuda {

// Enqueues dst[i] += src[i] for i in [0, n) on `stream` (nothing when n == 0) and checks the launch.
// One IEEE single-precision add per element, no fused operations: the result is bit-identical to the
// CPU ring's host loop for the same operands (nvcc does not flush denormals unless told to).
void launch_add_into(float* dst, const float* src, std::size_t n, cudaStream_t stream);

}  // namespace tt::comm::cuda
