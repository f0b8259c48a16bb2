#include "platform/real_platform.h"

#include <algorithm>

#include "core/backend_factory.h"

namespace tt::platform {

HostPathParts RealPlatform::host_path(const HostPathRequest& r) {
  comm::Transport& wire =
      r.link_gbps > 0
          ? static_cast<comm::Transport&>(link_.emplace(r.transport, comm::LinkLimit{r.link_gbps, {}}))
          : r.transport;
  return {r.channel, wire, memory_};
}

std::unique_ptr<Platform> make_cpu_platform(const Options& o) {
  return std::make_unique<RealPlatform>(DeviceKind::Cpu,
                                        make_backend(backend_options(DeviceKind::Cpu, o.threads)),
                                        /*device_gradients=*/false);
}

std::unique_ptr<Platform> make_cuda_platform(const Options& o) {
  BackendOptions bo = backend_options(DeviceKind::Cuda, o.threads);
  bo.tf32 = o.tf32;
  bo.cuda_device = o.rank % std::max(1, cuda_device_count());
  return std::make_unique<RealPlatform>(DeviceKind::Cuda, make_backend(bo), /*device_gradients=*/true);
}

// Note [Modelled links need modelled compute] (platform/emulated/emulated_platform.cpp): real values
// never cross a modelled link, and a real platform's time is measured.
void refuse_real(const Request& r, std::vector<std::string>& out) {
  if (r.emulated_links)
    out.push_back(
        "--link emulate moves no payload bytes, which only synthetic gradients allow: add --compute "
        "emulate, or use --link real (with --link-gbps to throttle)");
  if (r.cc_transfer_us > 0)
    out.push_back(
        "--cc-transfer-us charges the bounce-buffer crossings of an emulated GPU's gradients: add "
        "--compute emulate (a real GPU's copies cost what they cost)");
  if (r.cc_hardware)
    out.push_back(
        "--cc-hardware prices an emulated GPU's CC mode: add --compute emulate (a real GPU in CC mode "
        "costs what it costs)");
  if (r.virtual_time)
    out.push_back(
        "--time virtual computes an emulated run's time; real compute is measured: add --compute "
        "emulate, or drop --time");
}

void refuse_cpu(const Request& r, std::vector<std::string>& out) {
  refuse_real(r, out);
  if (r.tf32) out.push_back("--tf32 applies to --device cuda only");
}

}  // namespace tt::platform
