// The one RAII owner of CUDA memory: device memory (cudaMalloc) or page-locked host memory
// (cudaMallocHost, the only host memory cudaMemcpyAsync copies without an extra internal bounce).
// Move-only; empty when the size is 0; allocation failures throw RunError (base/cuda/cuda_check.h).
// Freeing is not stream-ordered: the owner makes sure no enqueued work still uses the memory.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "base/cuda/cuda_check.h"

namespace tt::cuda {

enum class CudaMemoryKind { kDevice, kPinnedHost };

template <CudaMemoryKind kKind>
class CudaBytes {
 public:
  CudaBytes() = default;
  explicit CudaBytes(std::size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    if constexpr (kKind == CudaMemoryKind::kPinnedHost)
      TT_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    else
      TT_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~CudaBytes() { release(); }
  CudaBytes(CudaBytes&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  CudaBytes& operator=(CudaBytes&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  CudaBytes(const CudaBytes&) = delete;
  CudaBytes& operator=(const CudaBytes&) = delete;

  void* get() const { return ptr_; }
  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t size() const { return size_; }
  // Grows to at least `bytes` (contents are not kept; the old memory is freed first, so the peak is
  // the new size); never shrinks, so a persistent scratch stops allocating once it has seen the
  // largest request.
  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    release();
    *this = CudaBytes(bytes);
  }

 private:
  void release() noexcept {
    if (ptr_ == nullptr) return;
    // Errors on free are ignored: a destructor cannot throw, and a sticky error resurfaces at the
    // next checked call anyway.
    if constexpr (kKind == CudaMemoryKind::kPinnedHost)
      static_cast<void>(cudaFreeHost(ptr_));
    else
      static_cast<void>(cudaFree(ptr_));
    ptr_ = nullptr;
    size_ = 0;
  }

  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

using DeviceBytes = CudaBytes<CudaMemoryKind::kDevice>;
using PinnedBytes = CudaBytes<CudaMemoryKind::kPinnedHost>;

}  // namespace tt::cuda
