// NodeLinkChannel: the ring's channel on a platform whose message inside a node is not what a message
// between nodes is (Note [Messages inside a node], core/emulated/emulated_gpu.h: h100-ppcie's NVLink in
// clear, tee-io-what-if's link encryption, Blackwell's encrypted NVLink inside a node and host bounce
// buffers out of it).
//
// The platform's channel is chosen per link, not per run, by message_route(): both ends decide from the
// same context and topology (core/emulated/topology.h), so they agree on which messages are sealed and
// how. A sealed message goes through `between`, the run's channel with its crossings, or, where the
// route stays inside a node and `inside` is given (Blackwell's fast: the same sealing, encrypted
// NVLink's set-up instead of the host bridge), through `inside`. A message the route leaves unsealed is
// copied into its wire as it is (the wire's overhead() bytes zeroed), with no seal, no counter, no
// crypto cost and no bounce-buffer crossing. The wire keeps between's size, so the ring's buffers and
// the links' tokens are the same whatever the pair. In virtual time a link carries only the first
// `carried` bytes of a message (emulated_link_transport.h) and the rest is synthetic (Note [Modelled
// links need modelled compute]), so only those are copied: writing whole wires would fill host memory a
// sealed token never touches.
#pragma once
#include <string>
#include <vector>

#include "comm/channel.h"
#include "core/emulated/emulated_gpu.h"
#include "core/emulated/topology.h"

namespace tt::platform {

class NodeLinkChannel final : public comm::ChannelDecorator {
 public:
  // `between` and `inside` (null: `between` for every sealed message) must outlive this channel and
  // have one overhead; `cc`: the platform's row; `carried`: bytes of a message its link carries (0: all).
  NodeLinkChannel(comm::Channel& between, comm::Channel* inside, const Topology& topology, const CcCosts& cc,
                  std::size_t carried);

  std::string name() const override;  // "<between>, inside a node in clear"
  void seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
            std::span<std::byte> wire) override;
  void open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
            std::span<std::byte> plain) override;
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;
  void charge_seal(const comm::MessageContext& ctx, std::size_t bytes) override;
  void charge_open(const comm::MessageContext& ctx, std::size_t bytes) override;

 private:
  // The channel the message of `ctx` goes through (message_route); null: copied as it is.
  comm::Channel* route(const comm::MessageContext& ctx) const;
  void copy_in_clear(std::span<const std::byte> from, std::span<std::byte> to) const;

  comm::Channel* inside_;
  Topology topology_;
  CcCosts cc_;
  std::size_t carried_;
  // A batch's jobs by channel, kept between batches so a batch allocates nothing once warm (one thread
  // runs a channel's batches at a time: the ring's).
  std::vector<SealJob> seal_between_, seal_inside_;
  std::vector<OpenJob> open_between_, open_inside_;
};

}  // namespace tt::platform
