// The real platforms: `cpu` (the CPU backend) and `cuda` (the CUDA backend, one GPU per rank where
// there are enough). Their values are real, their host ring adds on the host through the run's own
// channel, over real links (paced at --link-gbps if given); neither models anything, so each refuses
// the choices only an emulated GPU has.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "comm/transport/throttled_transport.h"
#include "platform/platform.h"

namespace tt::platform {

class RealPlatform final : public Platform {
 public:
  RealPlatform(DeviceKind kind, std::unique_ptr<Backend> backend, bool device_gradients)
      : kind_(kind), backend_(std::move(backend)), device_gradients_(device_gradients) {}
  DeviceKind kind() const override { return kind_; }
  Backend& backend() override { return *backend_; }
  bool real_values() const override { return true; }
  bool device_gradients() const override { return device_gradients_; }
  HostPathParts host_path(const HostPathRequest& r) override;

 private:
  DeviceKind kind_;
  std::unique_ptr<Backend> backend_;
  bool device_gradients_;
  comm::HostReduceMemory memory_;  // our algorithms' scratch on the host (one for all of them)
  std::optional<comm::ThrottledTransport> link_;
};

std::unique_ptr<Platform> make_cpu_platform(const Options& o);
std::unique_ptr<Platform> make_cuda_platform(const Options& o);
// What a platform without an emulated GPU refuses; the cpu platform also refuses --tf32.
void refuse_real(const Request& r, std::vector<std::string>& out);
void refuse_cpu(const Request& r, std::vector<std::string>& out);

}  // namespace tt::platform
