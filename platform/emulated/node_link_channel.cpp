#include "platform/emulated/node_link_channel.h"

#include <algorithm>

#include "base/error.h"

namespace tt::platform {

NodeLinkChannel::NodeLinkChannel(comm::Channel& between, comm::Channel* inside, const Topology& topology,
                                 const CcCosts& cc, std::size_t carried)
    : comm::ChannelDecorator(between), inside_(inside), topology_(topology), cc_(cc), carried_(carried) {
  if (inside != nullptr && inside->overhead() != between.overhead())
    throw RunError("a NodeLinkChannel's two channels must have one wire size");
}

std::string NodeLinkChannel::name() const {
  if (cc_.node == NodeMessages::Sealed && inside_ != nullptr)
    return inner().name() + "; inside a node " + inside_->name();
  return inner().name() + ", inside a node " + enum_name(cc_.node);
}

comm::Channel* NodeLinkChannel::route(const comm::MessageContext& ctx) const {
  // A sub-group's group message travels among its members only (Note [Sub-group streams],
  // comm/channel.h): a node's group stays inside the node; a local index's group leaves it.
  const bool in_node = ctx.receiver == comm::kAnyRank && ctx.group.kind == comm::GroupKind::Node;
  const MessageRoute r = message_route(cc_, topology_, ctx.sender, in_node ? ctx.group.base : ctx.receiver);
  if (!r.sealed()) return nullptr;
  return r.leaves_node || inside_ == nullptr ? &inner() : inside_;
}

void NodeLinkChannel::copy_in_clear(std::span<const std::byte> from, std::span<std::byte> to) const {
  const std::size_t n = carried_ > 0 ? std::min(carried_, to.size()) : to.size();
  const std::size_t copied = std::min(n, from.size());
  std::copy_n(from.begin(), copied, to.begin());
  // The bytes a seal would add carry nothing.
  std::fill_n(to.begin() + static_cast<std::ptrdiff_t>(copied), n - copied, std::byte{0});
}

void NodeLinkChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                           std::span<std::byte> wire) {
  if (comm::Channel* c = route(ctx)) return c->seal(ctx, plain, wire);
  copy_in_clear(plain, wire);
}

void NodeLinkChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                           std::span<std::byte> plain) {
  if (comm::Channel* c = route(ctx)) return c->open(ctx, wire, plain);
  copy_in_clear(wire.first(std::min(wire.size(), plain.size())), plain);
}

void NodeLinkChannel::seal_batch(std::span<const SealJob> jobs) {
  seal_between_.clear();
  seal_inside_.clear();
  for (const SealJob& j : jobs) {
    comm::Channel* c = route(j.ctx);
    if (c == nullptr)
      copy_in_clear(j.plain, j.wire);
    else
      (c == inside_ ? seal_inside_ : seal_between_).push_back(j);
  }
  if (!seal_inside_.empty()) inside_->seal_batch(seal_inside_);
  if (!seal_between_.empty()) inner().seal_batch(seal_between_);
}

void NodeLinkChannel::open_batch(std::span<const OpenJob> jobs) {
  open_between_.clear();
  open_inside_.clear();
  for (const OpenJob& j : jobs) {
    comm::Channel* c = route(j.ctx);
    if (c == nullptr)
      copy_in_clear(j.wire.first(std::min(j.wire.size(), j.plain.size())), j.plain);
    else
      (c == inside_ ? open_inside_ : open_between_).push_back(j);
  }
  if (!open_inside_.empty()) inside_->open_batch(open_inside_);
  if (!open_between_.empty()) inner().open_batch(open_between_);
}

void NodeLinkChannel::charge_seal(const comm::MessageContext& ctx, std::size_t bytes) {
  if (comm::Channel* c = route(ctx)) c->charge_seal(ctx, bytes);
}

void NodeLinkChannel::charge_open(const comm::MessageContext& ctx, std::size_t bytes) {
  if (comm::Channel* c = route(ctx)) c->charge_open(ctx, bytes);
}

}  // namespace tt::platform
