#include "comm/secure/seal_streams.h"

#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/identity/traffic_keys.h"

namespace tt::comm {

namespace {

enum class StreamKind : std::uint8_t { Link = 1, Group = 2, Pair = 3 };

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

SealStreams::Stream& SealStreams::stream_for(const MessageContext& ctx, bool sealing) {
  const int p = opt_.world_size;
  const int me = opt_.rank;
  const bool sender_ok = ctx.sender >= 0 && ctx.sender < p;
  const bool receiver_ok = ctx.receiver == kAnyRank || (ctx.receiver >= 0 && ctx.receiver < p);
  const bool mine =
      sealing ? ctx.sender == me : (ctx.receiver == me || (ctx.receiver == kAnyRank && ctx.sender != me));
  if (!sender_ok || !receiver_ok || ctx.sender == ctx.receiver || !mine) {
    throw RunError("sealed channel: rank " + std::to_string(me) + " cannot " + (sealing ? "seal" : "open") +
                   " a message at " + to_string(ctx));
  }
  const StreamKind kind = ctx.receiver == kAnyRank               ? StreamKind::Group
                          : ctx.receiver == (ctx.sender + 1) % p ? StreamKind::Link
                                                                 : StreamKind::Pair;
  for (auto& s : streams_) {
    if (s->kind == kind && s->sender == ctx.sender && s->receiver == ctx.receiver) return *s;
  }
  tee::StreamSecret secret;
  if (kind == StreamKind::Link) {
    // Sealing on a ring link is always me -> next; opening is always prev -> me.
    secret = (sealing ? keys_.send : keys_.recv).clone();
  } else if (!keys_.group.empty()) {
    secret = kind == StreamKind::Group ? tee::derive_group_stream_secret(keys_.group, rank_field(ctx.sender))
                                       : tee::derive_pair_stream_secret(keys_.group, rank_field(ctx.sender),
                                                                        rank_field(ctx.receiver));
  }
  if (secret.size() != 32)
    throw RunError("sealed channel: rank " + std::to_string(me) + " has no key for " + to_string(ctx));
  auto s =
      std::make_unique<Stream>(Stream{kind, ctx.sender, ctx.receiver, streams_.size(),
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

ChannelIntegrityError SealStreams::failure(const MessageContext& ctx, const std::string& reason) const {
  const int prev = (opt_.rank + opt_.world_size - 1) % opt_.world_size;
  return ChannelIntegrityError(opt_.rank, ctx.receiver == kAnyRank ? prev : ctx.sender, ctx, reason);
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
