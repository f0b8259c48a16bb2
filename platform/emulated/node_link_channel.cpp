#include "platform/emulated/node_link_channel.h"

#include <algorithm>
#include <vector>

#include "base/error.h"

namespace tt::platform {

NodeLinkChannel::NodeLinkChannel(comm::Channel& inner, const Topology& topology, NodeMessages node,
                                 std::size_t carried)
    : inner_(inner), topology_(topology), node_(node), carried_(carried) {
  if (node == NodeMessages::Sealed) throw RunError("a NodeLinkChannel is for messages a node does not seal");
}

std::string NodeLinkChannel::name() const {
  return inner_.name() + ", inside a node " + enum_name(node_);
}

bool NodeLinkChannel::inside_node(const comm::MessageContext& ctx) const {
  return ctx.receiver != comm::kAnyRank && topology_.node_of(ctx.sender) == topology_.node_of(ctx.receiver);
}

void NodeLinkChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                           std::span<std::byte> wire) {
  if (!inside_node(ctx)) return inner_.seal(ctx, plain, wire);
  // The plaintext as it is; the bytes a seal would add carry nothing.
  const std::size_t n = carried_ > 0 ? std::min(carried_, wire.size()) : wire.size();
  const std::size_t copied = std::min(n, plain.size());
  std::copy_n(plain.begin(), copied, wire.begin());
  std::fill_n(wire.begin() + static_cast<std::ptrdiff_t>(copied), n - copied, std::byte{0});
}

void NodeLinkChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                           std::span<std::byte> plain) {
  if (!inside_node(ctx)) return inner_.open(ctx, wire, plain);
  std::copy_n(wire.begin(), carried_ > 0 ? std::min(carried_, plain.size()) : plain.size(), plain.begin());
}

void NodeLinkChannel::seal_batch(std::span<const SealJob> jobs) {
  std::vector<SealJob> sealed;
  for (const SealJob& j : jobs) {
    if (inside_node(j.ctx))
      seal(j.ctx, j.plain, j.wire);
    else
      sealed.push_back(j);
  }
  if (!sealed.empty()) inner_.seal_batch(sealed);
}

void NodeLinkChannel::open_batch(std::span<const OpenJob> jobs) {
  std::vector<OpenJob> sealed;
  for (const OpenJob& j : jobs) {
    if (inside_node(j.ctx))
      open(j.ctx, j.wire, j.plain);
    else
      sealed.push_back(j);
  }
  if (!sealed.empty()) inner_.open_batch(sealed);
}

void NodeLinkChannel::charge_seal(const comm::MessageContext& ctx, std::size_t bytes) {
  if (!inside_node(ctx)) inner_.charge_seal(ctx, bytes);
}

void NodeLinkChannel::charge_open(const comm::MessageContext& ctx, std::size_t bytes) {
  if (!inside_node(ctx)) inner_.charge_open(ctx, bytes);
}

}  // namespace tt::platform
