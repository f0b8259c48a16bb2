#include "comm/secure/seal_streams.h"

#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/identity/traffic_keys.h"

namespace tt::comm {

namespace {

enum class StreamKind : std::uint8_t { Link = 1, Group = 2, Pair = 3, SubGroup = 4 };

std::uint32_t rank_field(int r) {
  return static_cast<std::uint32_t>(r);  // kAnyRank (-1) becomes 0xffffffff
}

// The associated data of one message (layout in sealed_channel.h). The length is the plaintext size
// the caller passes, not ctx.length: on the receiving side that is the size the receiver expects.
std::array<std::uint8_t, kSealAadSize> make_aad(const std::array<std::uint8_t, 16>& run_id,
                                                std::uint64_t epoch, const MessageContext& c,
                                                std::uint64_t length, tee::Cipher cipher, StreamKind kind) {
  std::array<std::uint8_t, kSealAadSize> a{};
  std::uint8_t* p = a.data();
  const std::string_view magic = "TTM1";
  p = std::copy(magic.begin(), magic.end(), p);
  p = std::copy(run_id.begin(), run_id.end(), p);
  tee::store_be64(p, epoch);
  tee::store_be64(p + 8, c.step);
  tee::store_be32(p + 16, c.bucket);
  p[20] = static_cast<std::uint8_t>(c.phase);
  tee::store_be32(p + 21, c.hop);
  tee::store_be32(p + 25, c.chunk);
  tee::store_be32(p + 29, c.segment);
  tee::store_be32(p + 33, rank_field(c.origin));
  tee::store_be32(p + 37, rank_field(c.sender));
  tee::store_be32(p + 41, rank_field(c.receiver));
  tee::store_be64(p + 45, length);
  p[53] = static_cast<std::uint8_t>(cipher);
  p[54] = static_cast<std::uint8_t>(kind);
  return a;
}

std::shared_ptr<const EpochKey> epoch_key(const tee::KeyRatchet& r) {
  auto k = std::make_shared<EpochKey>();
  k->epoch = r.epoch();
  k->key = r.key().clone();
  return k;
}

// A sub-group's members as the key label names them (Note [Sub-group streams], comm/channel.h).
tee::SubGroupMembers members_of(const SubGroup& g) {
  return {.base = rank_field(g.base), .stride = rank_field(g.stride), .size = rank_field(g.size)};
}

// Whether `g` names a sub-group of distinct ranks of a world of `p`, of a kind that has a key label.
bool valid_subgroup(const SubGroup& g, int p) {
  return !g.world() && g.base >= 0 && g.stride >= 1 && g.size >= 2 &&
         static_cast<std::int64_t>(g.base) + static_cast<std::int64_t>(g.stride) * (g.size - 1) < p;
}

StreamKind kind_of(const MessageContext& ctx, int p) {
  if (ctx.receiver == kAnyRank) return ctx.group.world() ? StreamKind::Group : StreamKind::SubGroup;
  return ctx.receiver == (ctx.sender + 1) % p ? StreamKind::Link : StreamKind::Pair;
}

// The kind in a sub-group stream's key label, per GroupKind after World (which has none).
constexpr tee::SubGroupKind kSubGroupKeyKind[] = {tee::SubGroupKind::Node, tee::SubGroupKind::LocalIndex};

}  // namespace

ChannelIntegrityError::ChannelIntegrityError(int rank, int peer, const MessageContext& ctx,
                                             const std::string& reason)
    : IntegrityError("rank " + std::to_string(rank) + ": sealed message from rank " + std::to_string(peer) +
                     " failed to open (" + reason + ") at " + to_string(ctx)),
      rank_(rank),
      peer_(peer),
      ctx_(ctx),
      reason_(reason) {}

struct SealStreams::Stream {
  StreamKind kind;
  int sender;
  int receiver;
  SubGroup group;  // a sub-group stream's members; World otherwise
  std::size_t index;
  tee::KeyRatchet ratchet;
  tee::MessageCounter positions;
  std::shared_ptr<const EpochKey> key;
};

SealStreams::SealStreams(SealedChannelOptions options, ChannelKeys keys, Profiler* profiler)
    : opt_(options), keys_(std::move(keys)), prof_(profiler) {
  if (opt_.world_size < 1 || opt_.rank < 0 || opt_.rank >= opt_.world_size)
    throw RunError("sealed channel: rank " + std::to_string(opt_.rank) + " outside world of " +
                   std::to_string(opt_.world_size));
}

SealStreams::~SealStreams() = default;

// Whether this rank may seal (it is the sender) or open (it is the receiver, or a member of the
// message's group other than the sender) the message of `ctx`.
bool SealStreams::may_use(const MessageContext& ctx, bool sealing) const {
  const int p = opt_.world_size;
  const int me = opt_.rank;
  const bool group = ctx.receiver == kAnyRank;
  const bool sender_ok = ctx.sender >= 0 && ctx.sender < p;
  const bool receiver_ok = group || (ctx.receiver >= 0 && ctx.receiver < p && ctx.receiver != ctx.sender);
  // Note [Sub-group streams]: a sub-group's message is sealed and opened by its members only.
  const bool group_ok =
      ctx.group.world() || (group && valid_subgroup(ctx.group, p) && ctx.group.index_of(ctx.sender) >= 0 &&
                            ctx.group.index_of(me) >= 0);
  const bool mine = sealing ? ctx.sender == me : (ctx.receiver == me || (group && ctx.sender != me));
  return sender_ok && receiver_ok && group_ok && mine;
}

// The epoch-0 secret of a stream that is not a ring link's (empty without a group secret).
tee::StreamSecret SealStreams::derived_secret(const MessageContext& ctx) const {
  if (keys_.group.empty()) return {};
  if (ctx.receiver != kAnyRank)
    return tee::derive_pair_stream_secret(keys_.group, rank_field(ctx.sender), rank_field(ctx.receiver));
  if (ctx.group.world()) return tee::derive_group_stream_secret(keys_.group, rank_field(ctx.sender));
  return tee::derive_subgroup_stream_secret(keys_.group,
                                            kSubGroupKeyKind[static_cast<std::size_t>(ctx.group.kind) - 1],
                                            rank_field(ctx.sender), members_of(ctx.group));
}

SealStreams::Stream& SealStreams::stream_for(const MessageContext& ctx, bool sealing) {
  const int p = opt_.world_size;
  if (!may_use(ctx, sealing)) {
    throw RunError("sealed channel: rank " + std::to_string(opt_.rank) + " cannot " +
                   (sealing ? "seal" : "open") + " a message at " + to_string(ctx));
  }
  const SubGroup group = ctx.receiver == kAnyRank ? ctx.group : SubGroup{};
  const StreamKind kind = kind_of(ctx, p);
  for (auto& s : streams_) {
    if (s->kind == kind && s->sender == ctx.sender && s->receiver == ctx.receiver && s->group == group)
      return *s;
  }
  // Sealing on a ring link is always me -> next; opening is always prev -> me.
  tee::StreamSecret secret =
      kind == StreamKind::Link ? (sealing ? keys_.send : keys_.recv).clone() : derived_secret(ctx);
  if (secret.size() != 32)
    throw RunError("sealed channel: rank " + std::to_string(opt_.rank) + " has no key for " + to_string(ctx));
  auto s =
      std::make_unique<Stream>(Stream{kind, ctx.sender, ctx.receiver, group, streams_.size(),
                                      tee::KeyRatchet(std::move(secret), opt_.cipher, opt_.rekey),
                                      tee::MessageCounter(static_cast<std::uint32_t>(ctx.sender)), nullptr});
  s->key = epoch_key(s->ratchet);
  streams_.push_back(std::move(s));
  return *streams_.back();
}

// Both ends call this for the same messages of a stream in the same order, so they rekey at the same
// message and agree on every counter.
SealTicket SealStreams::next(const MessageContext& ctx, std::uint64_t length, bool sealing) {
  Stream& s = stream_for(ctx, sealing);
  if (s.ratchet.exhausted()) {
    s.ratchet.advance();
    s.positions = tee::MessageCounter(static_cast<std::uint32_t>(s.sender));  // fresh key: counters restart
    s.key = epoch_key(s.ratchet);
    ++rekeys_;
    if (prof_ != nullptr) prof_->add(Counter::Rekeys, 1);
  }
  SealTicket t{ctx, s.key, s.index, s.positions.next(), {}, {}};
  t.aad = make_aad(opt_.run_id, s.key->epoch, ctx, length, opt_.cipher, s.kind);
  tee::store_be32(t.header.data(), static_cast<std::uint32_t>(s.key->epoch));
  tee::store_be64(t.header.data() + 4, t.at.counter());
  s.ratchet.record(length);
  return t;
}

std::string SealStreams::open_failure(bool tag_ok, const std::uint8_t* wire_header, const SealTicket& t) {
  const std::uint32_t wire_epoch = tee::load_be32(wire_header);
  const std::uint64_t wire_counter = tee::load_be64(wire_header + 4);
  const auto epoch32 = static_cast<std::uint32_t>(t.key->epoch);
  const std::uint64_t counter = t.at.counter();
  if (tag_ok && wire_epoch == epoch32 && wire_counter == counter) return {};
  if (tag_ok) return "clear header tampered";
  if (wire_epoch != epoch32) {
    return "wrong epoch: message says key epoch " + std::to_string(wire_epoch) + ", expected " +
           std::to_string(epoch32);
  }
  if (wire_counter != counter) {
    return "replayed or reordered: nonce counter " + std::to_string(wire_counter) + ", expected " +
           std::to_string(counter);
  }
  return "tag mismatch: tampered or wrong key";
}

// A group message came from this rank's predecessor in the ring of its group (the world's, or the
// sub-group's: members in index order).
ChannelIntegrityError SealStreams::failure(const MessageContext& ctx, const std::string& reason) const {
  int from = ctx.sender;
  if (ctx.receiver == kAnyRank && ctx.group.world()) {
    from = (opt_.rank + opt_.world_size - 1) % opt_.world_size;
  } else if (ctx.receiver == kAnyRank) {
    const SubGroup& g = ctx.group;
    from = g.base + g.stride * ((g.index_of(opt_.rank) + g.size - 1) % g.size);
  }
  return ChannelIntegrityError(opt_.rank, from, ctx, reason);
}

ChannelIntegrityError SealStreams::wrong_length(const MessageContext& ctx, std::size_t wire,
                                                std::size_t plain) const {
  return failure(ctx, std::string(wire < plain + kSealOverhead ? "short" : "long") +
                          " message: " + std::to_string(wire) + " of " +
                          std::to_string(plain + kSealOverhead) + " wire bytes");
}

void SealStreams::count(bool sealing, std::size_t messages, std::size_t ring_messages,
                        std::uint64_t bytes) const {
  if (prof_ == nullptr) return;
  prof_->add(sealing ? Counter::MessagesSealed : Counter::MessagesOpened, static_cast<int64_t>(messages));
  prof_->add(sealing ? Counter::RingSealed : Counter::RingOpened, static_cast<int64_t>(ring_messages));
  prof_->add(sealing ? Counter::BytesSealed : Counter::BytesOpened, static_cast<int64_t>(bytes));
}

}  // namespace tt::comm
