// Creating a backend by device kind, so the CLI and tools never name a concrete backend. The CUDA
// backend exists only in builds where CMake found nvcc (TEETRAIN_HAVE_CUDA); elsewhere asking for it
// is a clear InputError, never a crash.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "core/backend.h"
#include "core/emulated/emulated_gpu.h"
#include "core/run_clock.h"

namespace tt {

class EmulatedBackend;

struct BackendOptions {
  DeviceKind device = DeviceKind::Cpu;  // Emulated: an EmulatedBackend of `gpu` (--compute emulate)
  int threads = 1;                      // CPU backend: OpenMP/OpenBLAS threads
  int cuda_device = 0;  // CUDA backend: device ordinal (callers pass rank % cuda_device_count())
  bool tf32 = false;  // CUDA backend: allow TF32 tensor-core matmuls (FP32 by default, for exact comparisons)
  std::optional<EmulatedGpu> gpu;  // Emulated: the modelled GPU (required)
  RunClock* clock = nullptr;       // Emulated: the run's clock (virtual: ops advance it instead of waiting)
};

std::unique_ptr<Backend> make_backend(const BackendOptions& options);
// The emulated backend make_backend builds for DeviceKind::Emulated, as its concrete type: the one place
// its construction is written, for the emulated platform (platform/emulated/), which needs the GPU's
// streams and model, and for make_backend, which delegates here.
std::unique_ptr<EmulatedBackend> make_emulated_backend(const EmulatedGpu& gpu, RunClock* clock);
// Options for a plain backend of `device` with `threads` CPU threads (the rest at their defaults).
inline BackendOptions backend_options(DeviceKind device, int threads) {
  BackendOptions o;
  o.device = device;
  o.threads = threads;
  return o;
}

const char* device_name(DeviceKind kind);

// True when this binary was built with the CUDA backend.
bool cuda_compiled();
// Number of visible CUDA devices; 0 when not compiled in, no driver, or no GPU (never throws).
int cuda_device_count();

}  // namespace tt
