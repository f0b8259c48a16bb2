// The emulated platform (--compute emulate): the real model and optimizer run on an EmulatedBackend,
// whose ops are waits on the chosen GPU (core/emulated/: the backend stays in core, where the backend
// factory and the model tests build it). Its values are placeholders, and everything its host ring
// does on the GPU's behalf lives here: fast's device crypto as waits at the GPU's AES-GCM rate
// (emulated_device_channel.h), payload-free links (emulated_link_transport.h), the ring's adds as
// kernels on the GPU's communication stream (emulated_reduce_memory.h), in virtual time a sealed token
// per message with modelled crypto (virtual_seal_channel.h), and H100 CC's bounce-buffer crossings
// (cc_transfer_channel.h).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/transport/throttled_transport.h"
#include "core/emulated/emulated_backend.h"
#include "platform/emulated/cc_transfer_channel.h"
#include "platform/emulated/emulated_device_channel.h"
#include "platform/emulated/emulated_link_transport.h"
#include "platform/emulated/emulated_reduce_memory.h"
#include "platform/emulated/node_link_channel.h"
#include "platform/emulated/virtual_seal_channel.h"
#include "platform/platform.h"

namespace tt::platform {

class EmulatedPlatform final : public Platform {
 public:
  explicit EmulatedPlatform(const Options& o);
  DeviceKind kind() const override { return DeviceKind::Emulated; }
  Backend& backend() override { return *gpu_; }
  bool real_values() const override { return false; }
  const EmulatedGpu* modelled_gpu() const override { return &gpu_->gpu(); }
  std::string notice(const std::string& model, bool virtual_time) const override;
  HostPathParts host_path(const HostPathRequest& r) override;
  double cc_transfer_us() const override { return cc_transfers_ ? cc_transfers_->toll_us() : 0.0; }
  CcCharges cc_charges() const override {
    return {.launch_s = gpu_->cc_launch_seconds(),
            .copy_s = gpu_->cc_copy_seconds(),
            .sm_wait_s = gpu_->sm_wait_seconds()};
  }

 private:
  comm::Channel& sealing_channel(const HostPathRequest& r);
  // `sealing` with the bounce-buffer crossings of a message on `peer`'s path (fast) or the host's, in `slot`.
  comm::Channel& crossing_channel(const HostPathRequest& r, comm::Channel& sealing, const PeerWire& peer,
                                  std::optional<CcTransferChannel>& slot);
  // The ring's channel: each message by its route (Note [Messages inside a node]).
  comm::Channel& route_channel(const HostPathRequest& r);
  CcCopyPerByte crossing_bytes(const HostPathRequest& r, const CcCosts& cc) const;
  comm::Transport& ring_wire(const HostPathRequest& r, const comm::Channel& channel, bool modelled_links);

  std::unique_ptr<EmulatedBackend> gpu_;
  std::optional<EmulatedReduceMemory> gpu_memory_;  // modelled links: the ring's adds on the GPU
  std::optional<EmulatedDeviceChannel> gpu_crypto_;
  std::optional<VirtualSealChannel> virtual_seal_;  // virtual time: sealed tokens, modelled crypto
  std::optional<CcTransferChannel> cc_transfers_;   // wraps the ring's sealing channel (between nodes)
  std::optional<CcTransferChannel> cc_inside_;      // ... inside a node, where its path differs
  std::optional<NodeLinkChannel> node_link_;        // routes per message where a node's differ
  std::optional<comm::ThrottledTransport> link_;
  std::optional<EmulatedLinkTransport> emulated_link_;
  comm::HostReduceMemory host_memory_;  // real links: the ring's adds on the host
};

std::unique_ptr<Platform> make_emulated_platform(const Options& o);
// What the emulated platform refuses: what needs real values, and --tf32.
void refuse_emulated(const Request& r, std::vector<std::string>& out);

}  // namespace tt::platform
