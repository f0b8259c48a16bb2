// Small CUDA runtime helpers for comm/cuda: error checks that throw, and RAII owners of device memory,
// pinned host memory, streams and events.
//
// Every CUDA call in comm/cuda goes through TT_COMM_CUDA_CHECK so a failure becomes a tt::RunError that
// names the call, the CUDA error string and the source line (the names are prefixed with COMM so they
// never collide with the backend's own macros when both headers meet in one file).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "engine/core/error.h"

namespace tt::comm::cuda {

// Throws RunError("<what> failed: <cuda error name>: <cuda error string>") unless rc == cudaSuccess.
inline void check_cuda(cudaError_t rc, const char* what, const char* file, int line) {
  if (rc == cudaSuccess) return;
  throw RunError(std::string(what) + " failed: " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc) +
                 " (" + file + ":" + std::to_string(line) + ")");
}

inline void check_launch(cudaError_t rc, const char* what, const char* file, int line) {
  if (rc == cudaErrorNotReady) return;
  check_cuda(rc, (std::string(what) + " (kernel launch)").c_str(), file, line);
}

// Number of usable GPUs; 0 when there is no driver, no device, or the runtime cannot start. Never throws:
// the tests use it to decide to skip.
inline int device_count_or_zero() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error so later checks do not see it
    return 0;
  }
  return n;
}

}  // namespace tt::comm::cuda

#define TT_COMM_CUDA_CHECK(call) ::tt::comm::cuda::check_cuda((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch errors are only reported by cudaGetLastError. cudaErrorNotReady is the
// answer of an earlier event/stream query, not a launch failure, so it does not count.
#define TT_COMM_CUDA_CHECK_LAUNCH(what) \
  ::tt::comm::cuda::check_launch(cudaGetLastError(), what, __FILE__, __LINE__)

namespace tt::comm::cuda {

// Makes `device` current for the scope and restores the previous one. The current device is per host
// thread, and the ring may run on a communication thread that never called cudaSetDevice.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    TT_COMM_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) TT_COMM_CUDA_CHECK(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (changed_) (void)cudaSetDevice(previous_);  // best effort: destructors must not throw
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

inline int current_device() {
  int d = 0;
  TT_COMM_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

// Device memory of `bytes` bytes (cudaMalloc). Move-only; empty when bytes == 0.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  explicit DeviceBytes(std::size_t bytes) : size_(bytes) {
    if (bytes > 0) TT_COMM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBytes(DeviceBytes&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBytes& operator=(DeviceBytes&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
  }

  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t size() const { return size_; }
  // Grows to at least `bytes` (contents are not kept); never shrinks, so a persistent scratch stops
  // allocating once it has seen the largest bucket.
  void reserve(std::size_t bytes) {
    if (bytes > size_) *this = DeviceBytes(bytes);
  }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory (cudaMallocHost): the only host memory cudaMemcpyAsync copies without an
// extra internal bounce, and what the H100 CC path stages through.
class PinnedBytes {
 public:
  PinnedBytes() = default;
  explicit PinnedBytes(std::size_t bytes) : size_(bytes) {
    if (bytes > 0) TT_COMM_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
  }
  PinnedBytes(PinnedBytes&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PinnedBytes& operator=(PinnedBytes&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
  ~PinnedBytes() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
  }

  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  std::size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// A non-blocking stream (does not serialise with the legacy default stream).
class Stream {
 public:
  Stream() { TT_COMM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return s_; }
  void synchronize(const char* what) const {
    check_cuda(cudaStreamSynchronize(s_), what, __FILE__, __LINE__);
  }

 private:
  cudaStream_t s_ = nullptr;
};

// An event without timing (cheapest to record and query).
class Event {
 public:
  Event() { TT_COMM_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);  // fine while pending: released on completion
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { TT_COMM_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // True once the work recorded before it finished; throws on an error of that work.
  bool query() const {
    const cudaError_t rc = cudaEventQuery(e_);
    if (rc == cudaErrorNotReady) return false;
    TT_COMM_CUDA_CHECK(rc);
    return true;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace tt::comm::cuda
