// CUDA streams and events for comm/cuda, and the names comm/cuda takes from base/cuda: the one check
// (TT_CUDA_CHECK: a failing call becomes a tt::RunError naming the call, the CUDA error and the line),
// the one memory owner, the device query and the scoped device switch.
#pragma once
#include <cuda_runtime.h>

#include "base/cuda/cuda_check.h"
#include "base/cuda/device.h"
#include "base/cuda/device_memory.h"

namespace tt::comm::cuda {

using ::tt::cuda::current_device;
using ::tt::cuda::device_count_or_zero;
using ::tt::cuda::DeviceBytes;
using ::tt::cuda::DeviceGuard;
using ::tt::cuda::PinnedBytes;

// A non-blocking stream (does not serialise with the legacy default stream).
class Stream {
 public:
  Stream() { TT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return s_; }
  void synchronize(const char* what) const {
    ::tt::cuda::check_cuda(cudaStreamSynchronize(s_), what, __FILE__, __LINE__);
  }

 private:
  cudaStream_t s_ = nullptr;
};

// An event without timing (cheapest to record and query).
class Event {
 public:
  Event() { TT_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);  // fine while pending: released on completion
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { TT_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // True once the work recorded before it finished; throws on an error of that work.
  bool query() const {
    const cudaError_t rc = cudaEventQuery(e_);
    if (rc == cudaErrorNotReady) return false;
    TT_CUDA_CHECK(rc);
    return true;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace tt::comm::cuda
