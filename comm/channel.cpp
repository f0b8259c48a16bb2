#include "comm/channel.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"

namespace tt::comm {

const char* phase_name(MessagePhase p) {
  switch (p) {
    case MessagePhase::ScatterReduce:
      return "scatter_reduce";
    case MessagePhase::AllGather:
      return "all_gather";
    case MessagePhase::Broadcast:
      return "broadcast";
    case MessagePhase::Barrier:
      return "barrier";
    case MessagePhase::BlobAllgather:
      return "allgather";
    case MessagePhase::RdFold:
      return "rd_fold";
    case MessagePhase::RdExchange:
      return "rd_exchange";
    case MessagePhase::RdUnfold:
      return "rd_unfold";
    case MessagePhase::RhdFold:
      return "rhd_fold";
    case MessagePhase::RhdScatterReduce:
      return "rhd_scatter_reduce";
    case MessagePhase::RhdAllGather:
      return "rhd_all_gather";
    case MessagePhase::RhdUnfold:
      return "rhd_unfold";
    case MessagePhase::HierLocalScatterReduce:
      return "hier_local_scatter_reduce";
    case MessagePhase::HierInterScatterReduce:
      return "hier_inter_scatter_reduce";
    case MessagePhase::HierInterAllGather:
      return "hier_inter_all_gather";
    case MessagePhase::HierLocalAllGather:
      return "hier_local_all_gather";
    case MessagePhase::ShardHandover:
      return "shard_handover";
    case MessagePhase::ShardHandback:
      return "shard_handback";
  }
  return "unknown";
}

std::string to_string(const MessageContext& c) {
  std::ostringstream os;
  os << "step " << c.step << ", bucket " << c.bucket << ", phase " << phase_name(c.phase) << ", hop " << c.hop
     << ", chunk " << c.chunk << ", segment " << c.segment << ", origin " << c.origin << ", sender "
     << c.sender << ", receiver ";
  if (c.receiver == kAnyRank) {
    os << "any";
  } else {
    os << c.receiver;
  }
  os << ", " << c.length << " bytes";
  if (c.receiver == kAnyRank && !c.group.world()) {
    os << ", " << group_kind_name(c.group.kind) << " group of ranks " << c.group.base;
    for (int i = 1; i < c.group.size; ++i) os << "," << c.group.base + i * c.group.stride;
  }
  return os.str();
}

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::World:
      return "world";
    case GroupKind::Node:
      return "node";
    case GroupKind::LocalIndex:
      return "local-index";
  }
  return "?";
}

int SubGroup::index_of(int rank) const {
  const int off = rank - base;
  if (stride < 1 || off < 0 || off % stride != 0 || off / stride >= size) return -1;
  return off / stride;
}

void PlainChannel::seal(const MessageContext& ctx, std::span<const std::byte> plain,
                        std::span<std::byte> wire) {
  if (wire.size() != plain.size())
    throw RunError("plain channel: wire size mismatch (" + to_string(ctx) + ")");
  std::copy(plain.begin(), plain.end(), wire.begin());
}

void PlainChannel::open(const MessageContext& ctx, std::span<const std::byte> wire,
                        std::span<std::byte> plain) {
  if (wire.size() != plain.size())
    throw RunError("plain channel: wire size mismatch (" + to_string(ctx) + ")");
  std::copy(wire.begin(), wire.end(), plain.begin());
}

}  // namespace tt::comm
