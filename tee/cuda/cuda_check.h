// Return-code checks for the CUDA runtime calls of tee/cuda/. A failing call throws CudaError naming
// the call, CUDA's error string and the source line, so a failure on a remote GPU machine is
// diagnosable from the log alone. Launches are checked with TT_TEE_CUDA_CHECK_LAUNCH().
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tt::tee::cuda {

class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                  ") at " + file + ":" + std::to_string(line));
}
inline void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}

}  // namespace tt::tee::cuda

#define TT_TEE_CUDA_CHECK(call) ::tt::tee::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define TT_TEE_CUDA_CHECK_LAUNCH() \
  ::tt::tee::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
