#include "platform/platform.h"

#include <algorithm>

#include "base/error.h"
#include "platform/emulated/emulated_platform.h"
#include "platform/real_platform.h"

namespace tt::platform {

namespace {

constexpr PlatformEntry kPlatforms[] = {
    {DeviceKind::Cpu, "cpu", refuse_cpu, make_cpu_platform},
    {DeviceKind::Cuda, "cuda", refuse_real, make_cuda_platform},
    {DeviceKind::Emulated, "emulated", refuse_emulated, make_emulated_platform},
};

}  // namespace

std::span<const PlatformEntry> platforms() {
  return kPlatforms;
}

const PlatformEntry& platform_entry(DeviceKind kind) {
  const auto* it = std::find_if(std::begin(kPlatforms), std::end(kPlatforms),
                                [kind](const PlatformEntry& e) { return e.kind == kind; });
  if (it == std::end(kPlatforms)) throw RunError("no platform for this device kind");
  return *it;
}

}  // namespace tt::platform
