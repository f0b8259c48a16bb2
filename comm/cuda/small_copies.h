// Many tiny device copies in one kernel launch: the 12-byte clear headers of a batch of sealed ring
// messages, written after their tags (seal) or gathered for the host to read (open). One launch
// instead of one cudaMemcpyAsync per message, which would cost a few microseconds each.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tt::comm::cuda {

struct SmallCopy {
  const std::byte* src;  // device
  std::byte* dst;        // device
  std::uint32_t bytes;   // a few dozen at most: one thread copies one descriptor
};

// Enqueues every copy of descs[0, n) (the descriptor array itself in device memory) on `stream`.
void launch_small_copies(const SmallCopy* descs, std::size_t n, cudaStream_t stream);

}  // namespace tt::comm::cuda
