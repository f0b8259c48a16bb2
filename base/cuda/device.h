// The one device query (how many GPUs this process can use) and the one scoped device switch.
#pragma once
#include <cuda_runtime.h>

#include "base/cuda/cuda_check.h"

namespace tt::cuda {

// Number of usable GPUs; 0 when there is no driver, no device, or the runtime cannot start. Never
// throws: callers use it to choose a backend and tests to decide to skip.
inline int device_count_or_zero() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // clear the "no device" error: later checks must not see it
    return 0;
  }
  return n;
}

inline int current_device() {
  int d = 0;
  TT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

// Makes `device` current for the scope and restores the previous one. The current device is per host
// thread, and a communication or crypto thread may never have called cudaSetDevice.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : previous_(current_device()) {
    if (previous_ != device) TT_CUDA_CHECK(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (changed_) static_cast<void>(cudaSetDevice(previous_));  // best effort: destructors must not throw
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace tt::cuda
