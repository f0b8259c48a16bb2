// Return-code checks for CUDA runtime, cuBLAS and cuDNN calls. Every failing call becomes a
// tt::RunError naming the call, the library's error string and the source line, so a failure on a
// remote GPU machine is diagnosable from the log alone. Kernel launches are checked with
// TT_CUDA_CHECK_LAUNCH() (cudaGetLastError: bad launch configuration, missing kernel image).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace tt::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t st, const char* call, const char* file, int line);

inline void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}
inline void check_cublas(cublasStatus_t st, const char* call, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) throw_cublas_error(st, call, file, line);
}
inline void check_cudnn(cudnnStatus_t st, const char* call, const char* file, int line) {
  if (st != CUDNN_STATUS_SUCCESS) throw_cudnn_error(st, call, file, line);
}

}  // namespace tt::cuda

#define TT_CUDA_CHECK(call) ::tt::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define TT_CUBLAS_CHECK(call) ::tt::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define TT_CUDNN_CHECK(call) ::tt::cuda::check_cudnn((call), #call, __FILE__, __LINE__)
#define TT_CUDA_CHECK_LAUNCH() ::tt::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
