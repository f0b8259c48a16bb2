// NodeLinkChannel: the ring's channel on a platform whose messages inside a node are not sealed
// (Note [Messages inside a node], core/emulated/emulated_gpu.h: h100-ppcie's NVLink in clear,
// tee-io-what-if's link encryption).
//
// The platform's channel is chosen per link, not per run: a message whose sender and receiver are GPUs
// of one node (core/emulated/topology.h) is copied into its wire as it is (the wire's overhead() bytes
// zeroed), with no seal, no counter, no crypto cost and no bounce-buffer crossing; every other message
// (between nodes, or a group message) goes through `inner`, the run's channel with its crossings. Both
// ends decide from the same context and topology, so they agree on which messages are sealed. The wire
// keeps inner's size, so the ring's buffers and the links' tokens are the same whatever the pair. In
// virtual time a link carries only the first `carried` bytes of a message (emulated_link_transport.h)
// and the rest is synthetic (Note [Modelled links need modelled compute]), so only those are copied:
// writing whole wires would fill host memory a sealed token never touches.
#pragma once
#include <string>

#include "comm/channel.h"
#include "core/emulated/emulated_gpu.h"
#include "core/emulated/topology.h"

namespace tt::platform {

class NodeLinkChannel final : public comm::Channel {
 public:
  // `inner` must outlive this channel; `node`: what a message inside a node is (not Sealed); `carried`:
  // bytes of a message its link carries (0: all).
  NodeLinkChannel(comm::Channel& inner, const Topology& topology, NodeMessages node, std::size_t carried);

  std::string name() const override;  // "<inner>, inside a node in clear"
  std::size_t overhead() const override { return inner_.overhead(); }
  bool pass_through() const override { return inner_.pass_through(); }
  void seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
            std::span<std::byte> wire) override;
  void open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
            std::span<std::byte> plain) override;
  std::size_t parallelism() const override { return inner_.parallelism(); }
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;
  void charge_seal(const comm::MessageContext& ctx, std::size_t bytes) override;
  void charge_open(const comm::MessageContext& ctx, std::size_t bytes) override;
  comm::SendSchedule send_schedule() const override { return inner_.send_schedule(); }

 private:
  // Both ends GPUs of one node (a group message, kAnyRank, is not).
  bool inside_node(const comm::MessageContext& ctx) const;

  comm::Channel& inner_;
  Topology topology_;
  NodeMessages node_;
  std::size_t carried_;
};

}  // namespace tt::platform
