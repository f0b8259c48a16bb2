// Return-code checks for cuBLAS and cuDNN calls, next to base/cuda/cuda_check.h's TT_CUDA_CHECK and
// TT_CUDA_CHECK_LAUNCH for the runtime. Every failing call becomes a tt::RunError naming the call, the
// library's error string and the source line, so a failure on a remote GPU machine is diagnosable from
// the log alone.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "base/cuda/cuda_check.h"

namespace tt::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t st, const char* call, const char* file, int line);

inline void check_cublas(cublasStatus_t st, const char* call, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) throw_cublas_error(st, call, file, line);
}
inline void check_cudnn(cudnnStatus_t st, const char* call, const char* file, int line) {
  if (st != CUDNN_STATUS_SUCCESS) throw_cudnn_error(st, call, file, line);
}

}  // namespace tt::cuda

#define TT_CUBLAS_CHECK(call) ::tt::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define TT_CUDNN_CHECK(call) ::tt::cuda::check_cudnn((call), #call, __FILE__, __LINE__)
