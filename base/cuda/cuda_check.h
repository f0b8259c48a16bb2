// The one return-code check for CUDA runtime calls. A failing call throws tt::RunError naming the
// call, CUDA's error name and string and the source line, so a failure on a remote GPU machine is
// diagnosable from the log alone. Library-specific checks (cuBLAS, cuDNN, NCCL) sit with their users
// and throw the same way.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "base/error.h"

namespace tt::cuda {

// "<call> failed: <name>: <string> (<file>:<line>)".
[[noreturn]] inline void throw_cuda_error(cudaError_t rc, const char* call, const char* file, int line) {
  // A launch error stays queryable through cudaGetLastError: reset it so the next check does not report
  // this failure a second time (sticky errors survive the reset anyway).
  static_cast<void>(cudaGetLastError());
  throw RunError(std::string(call) + " failed: " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc) +
                 " (" + file + ":" + std::to_string(line) + ")");
}

inline void check_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess) throw_cuda_error(rc, call, file, line);
}

// After a kernel launch: launch errors are only reported by cudaGetLastError. cudaErrorNotReady is the
// answer of an earlier event or stream query on this thread, not a launch failure, so it does not count.
inline void check_launch(const char* file, int line) {
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess && rc != cudaErrorNotReady) throw_cuda_error(rc, "kernel launch", file, line);
}

}  // namespace tt::cuda

#define TT_CUDA_CHECK(call) ::tt::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define TT_CUDA_CHECK_LAUNCH() ::tt::cuda::check_launch(__FILE__, __LINE__)
