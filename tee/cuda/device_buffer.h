// RAII owners for device memory and pinned host memory (throw CudaError on allocation failure).
// Freeing is not stream-ordered: the owner must make sure no enqueued work still uses the memory.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "tee/cuda/cuda_check.h"

namespace tt::tee::cuda {

template <bool kPinnedHost>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    if constexpr (kPinnedHost)
      TT_TEE_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    else
      TT_TEE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~CudaBuffer() { reset(); }
  CudaBuffer(CudaBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t size() const { return bytes_; }

 private:
  void reset() noexcept {
    if (!ptr_) return;
    // Errors on free are ignored: a destructor cannot throw, and a sticky error resurfaces at the
    // next checked call anyway.
    if constexpr (kPinnedHost)
      (void)cudaFreeHost(ptr_);
    else
      (void)cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

using DeviceBuffer = CudaBuffer<false>;  // cudaMalloc
using PinnedBuffer = CudaBuffer<true>;   // cudaMallocHost

}  // namespace tt::tee::cuda
