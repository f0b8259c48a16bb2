// CUDA backend: construction, description, memory and copies; the error helpers of cuda_check.h.
#include "core/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/cuda/device.h"
#include "base/error.h"
#include "core/cuda/cuda_backend_impl.h"
#include "core/cuda/cuda_check.h"

namespace tt {

namespace cuda {

namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " (" + file + ":" + std::to_string(line) + ")";
}

}  // namespace

void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw RunError("cublas: " + where(call, file, line) + " failed: " + cublasGetStatusName(st) + ": " +
                 cublasGetStatusString(st));
}

void throw_cudnn_error(cudnnStatus_t st, const char* call, const char* file, int line) {
  throw RunError("cudnn: " + where(call, file, line) + " failed: " + cudnnGetErrorString(st));
}

// ---- scratch --------------------------------------------------------------------------------------

void* Scratch::get(std::size_t bytes, cudaStream_t stream) {
  if (bytes <= memory_.size() && memory_.get() != nullptr) return memory_.get();
  TT_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Round up to 1 MiB steps (at least 256 bytes) so a slowly growing need does not reallocate every call.
  memory_.reserve(std::max<std::size_t>(256, (bytes + (1u << 20) - 1) / (1u << 20) * (1u << 20)));
  return memory_.get();
}

// ---- construction ---------------------------------------------------------------------------------

namespace {

int checked_device(int ordinal) {
  const int count = ::tt::cuda::device_count_or_zero();
  if (ordinal < 0 || ordinal >= count) {
    throw InputError("cuda backend: device " + std::to_string(ordinal) + " is not visible (" +
                     std::to_string(count) + " CUDA device(s); check CUDA_VISIBLE_DEVICES)");
  }
  TT_CUDA_CHECK(cudaSetDevice(ordinal));
  return ordinal;
}

StreamPtr make_stream() {
  cudaStream_t s = nullptr;
  // Non-blocking: our work must not serialize with the legacy default stream other libraries may use.
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamPtr(s);
}

CublasPtr make_cublas(cudaStream_t stream, bool tf32) {
  cublasHandle_t h = nullptr;
  TT_CUBLAS_CHECK(cublasCreate(&h));
  CublasPtr owned(h);
  TT_CUBLAS_CHECK(cublasSetStream(h, stream));
  // DEFAULT_MATH keeps FP32 arithmetic exact-FP32 (no tensor-core downconversion); TF32 only on request.
  TT_CUBLAS_CHECK(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  return owned;
}

CudnnPtr make_cudnn(cudaStream_t stream) {
  cudnnHandle_t h = nullptr;
  TT_CUDNN_CHECK(cudnnCreate(&h));
  CudnnPtr owned(h);
  TT_CUDNN_CHECK(cudnnSetStream(h, stream));
  return owned;
}

std::string version3(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

CudaBackend::CudaBackend(int device_ordinal, bool tf32)
    : device_(checked_device(device_ordinal)),
      tf32_(tf32),
      compute_type_(tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F),
      stream_(make_stream()),
      cublas_(make_cublas(stream_.get(), tf32)) {
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  int cublas_version = 0;
  TT_CUBLAS_CHECK(cublasGetVersion(cublas_.get(), &cublas_version));  // e.g. 130000 = 13.0.0
  const auto cudnn_version = static_cast<int>(cudnnGetVersion());     // e.g. 91900 = 9.19.0
  const double gib = static_cast<double>(prop.totalGlobalMem) / static_cast<double>(1ull << 30);
  const std::string sm = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  const std::string libraries =
      "cuBLAS " + version3(cublas_version / 10000, cublas_version % 10000 / 100, cublas_version % 100) +
      ", cuDNN " + version3(cudnn_version / 10000, cudnn_version % 10000 / 100, cudnn_version % 100) +
      (tf32_ ? ", TF32" : ", FP32");
  description_ = "cuda: " + std::string(prop.name) + " (device " + std::to_string(device_) + ", " + sm +
                 ", " + std::to_string(static_cast<long>(gib + 0.5)) + " GiB), " + libraries;
  numerics_ = "cuda: " + std::string(prop.name) + " (" + sm + "), " + libraries;
}

// Out of line: the plans' and scratch buffers' destructors run here, in reverse declaration order.
CudaBackend::~CudaBackend() {
  // Let queued work finish before its buffers and handles go away; errors cannot be reported here.
  static_cast<void>(cudaStreamSynchronize(stream_.get()));
}

// ---- memory ---------------------------------------------------------------------------------------

cudnnHandle_t CudaBackend::cudnn() {
  if (cudnn_ == nullptr) cudnn_ = make_cudnn(stream());
  return cudnn_.get();
}

void CudaBackend::use_device() const {
  TT_CUDA_CHECK(cudaSetDevice(device_));
}

void* CudaBackend::allocate(std::size_t bytes) {
  use_device();
  // cudaMalloc aligns to 256 bytes; a zero-byte request still gets a distinct, freeable pointer.
  const std::size_t n = std::max<std::size_t>(bytes, 256);
  void* p = nullptr;
  TT_CUDA_CHECK(cudaMalloc(&p, n));
  try {
    // Zero on our stream, then wait, so the memory reads as zero to any stream or thread after this.
    TT_CUDA_CHECK(cudaMemsetAsync(p, 0, n, stream()));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  } catch (...) {
    static_cast<void>(cudaFree(p));
    throw;
  }
  return p;
}

void CudaBackend::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  // cudaFree waits for outstanding work on the device, so queued kernels never see freed memory.
  if (cudaFree(p) != cudaSuccess) static_cast<void>(cudaGetLastError());
}

// Host memory may be pageable and reused by the caller as soon as we return: both host copies wait
// for the stream. They touch no backend state but the stream, so another thread may call them.
void CudaBackend::copy_to_device(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  use_device();
  TT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream()));
  TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  use_device();
  TT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void CudaBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  // The interface has memmove semantics (as the CPU backend); cudaMemcpy does not allow overlap, so
  // overlapping ranges go through scratch.
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  if (d < s + bytes && s < d + bytes) {
    void* tmp = copy_scratch_.get(bytes, stream());
    TT_CUDA_CHECK(cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, stream()));
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
}

void CudaBackend::synchronize() {
  TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

// ---- cuBLAS helpers -------------------------------------------------------------------------------

void CudaBackend::gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                       const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (m == 0 || n == 0) return;
  TT_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb,
                               &beta, C, CUDA_R_32F, ldc, compute_type_, CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::gemm_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                               const float* A, int lda, long long stride_a, const float* B, int ldb,
                               long long stride_b, float beta, float* C, int ldc, long long stride_c,
                               int batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  TT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_.get(), ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda,
                                             stride_a, B, CUDA_R_32F, ldb, stride_b, &beta, C, CUDA_R_32F,
                                             ldc, stride_c, batch, compute_type_, CUBLAS_GEMM_DEFAULT));
}

}  // namespace cuda

// ---- public entry points --------------------------------------------------------------------------

std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, bool tf32) {
  return std::make_unique<cuda::CudaBackend>(device_ordinal, tf32);
}

}  // namespace tt
