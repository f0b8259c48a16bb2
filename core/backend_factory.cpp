#include "core/backend_factory.h"

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/emulated/emulated_backend.h"
#ifdef TEETRAIN_HAVE_CUDA
#include "base/cuda/device.h"
#include "core/cuda/cuda_backend.h"
#endif

namespace tt {

const char* device_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cuda:
      return "cuda";
    case DeviceKind::Emulated:
      return "emulated";
    case DeviceKind::Cpu:
      break;
  }
  return "cpu";
}

bool cuda_compiled() {
#ifdef TEETRAIN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef TEETRAIN_HAVE_CUDA
  return cuda::device_count_or_zero();
#else
  return 0;
#endif
}

std::unique_ptr<EmulatedBackend> make_emulated_backend(const EmulatedGpu& gpu, RunClock* clock) {
  return std::make_unique<EmulatedBackend>(gpu, EmulatedBackend::Timing::Wait, std::size_t{64} << 20, clock);
}

std::unique_ptr<Backend> make_backend(const BackendOptions& o) {
  if (o.device == DeviceKind::Emulated) {
    if (!o.gpu) throw RunError("an emulated backend needs its GPU (BackendOptions::gpu)");
    return make_emulated_backend(*o.gpu, o.clock);
  }
  if (o.device == DeviceKind::Cpu) return make_cpu_backend(o.threads);
  if (!cuda_compiled()) {
    throw InputError(
        "--device cuda: this teetrain was built without the CUDA backend (nvcc was not found at "
        "configure time); install the CUDA toolkit and rebuild, or use --device cpu");
  }
  if (cuda_device_count() == 0) {
    throw InputError(
        "--device cuda: no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES), or use "
        "--device cpu");
  }
#ifdef TEETRAIN_HAVE_CUDA
  return make_cuda_backend(o.cuda_device, o.tf32);
#else
  return nullptr;
#endif
}

}  // namespace tt
