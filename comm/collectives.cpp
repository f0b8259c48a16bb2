#include "comm/collectives.h"

#include <algorithm>
#include <array>
#include <string>

#include "base/error.h"
#include "tee/errors.h"

namespace tt::comm {

namespace {

void count(Profiler* prof, Counter messages, Counter bytes, std::size_t n) {
  if (prof == nullptr) return;
  prof->add(messages, 1);
  prof->add(bytes, static_cast<int64_t>(n));
}

MessageContext make_ctx(MessagePhase phase, std::uint64_t seq, std::uint32_t hop, std::uint32_t chunk,
                        std::uint32_t segment, int origin, int sender, int receiver, std::size_t length) {
  MessageContext c;
  c.step = 0;
  c.bucket = static_cast<std::uint32_t>(seq);
  c.phase = phase;
  c.hop = hop;
  c.chunk = chunk;
  c.segment = segment;
  c.origin = origin;
  c.sender = sender;
  c.receiver = receiver;
  c.length = length;
  return c;
}

}  // namespace

Collectives::Collectives(Transport& transport, Profiler* profiler)
    : t_(transport), channel_(&plain_), prof_(profiler) {}

Collectives::Collectives(Transport& transport, Channel& channel, Profiler* profiler)
    : t_(transport), channel_(&channel), prof_(profiler) {}

std::size_t Collectives::wait(Request& r, const MessageContext& ctx) {
  try {
    return t_.wait(r);
  } catch (const RunError& e) {
    // Note [Sizes before receives]: a longer message where a sealed one belongs is an attack signal.
    throw_wait_failure(e, std::string("collective failed at ") + to_string(ctx) + ": " + e.what(),
                       !channel_->pass_through());
  }
}

// Seals `plain` into `wire` (unless pass-through) and posts the send. `wire` must stay untouched
// until `req` completes.
void Collectives::send_sealed(int peer, int tag, const MessageContext& ctx, std::span<const std::byte> plain,
                              std::vector<std::byte>& wire, Request& req) {
  std::span<const std::byte> out = plain;
  if (!channel_->pass_through()) {
    wire.resize(plain.size() + channel_->overhead());
    channel_->seal(ctx, plain, wire);
    out = wire;
  }
  req = t_.isend(peer, out, tag);
  count(prof_, Counter::MessagesSent, Counter::BytesSent, out.size());
}

// Receives one message from `peer` into `plain` (through wire_in_ and open() unless pass-through);
// a message of the wrong length is fatal.
void Collectives::recv_opened(int peer, int tag, const MessageContext& ctx, std::span<std::byte> plain) {
  const bool pass = channel_->pass_through();
  const std::size_t expected = plain.size() + (pass ? 0 : channel_->overhead());
  if (!pass && wire_in_.size() < expected) wire_in_.resize(expected);
  std::span<std::byte> dst = pass ? plain : std::span(wire_in_).first(expected);
  Request req = t_.irecv(peer, dst, tag);
  const std::size_t got = wait(req, ctx);
  count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
  if (got != expected) {
    const std::string what = "collective: rank " + std::to_string(t_.rank()) +
                             " got a short message from rank " + std::to_string(peer) + " (" +
                             std::to_string(got) + " of " + std::to_string(expected) + " bytes) at " +
                             to_string(ctx);
    // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
    if (!pass) throw IntegrityError(what);
    throw RunError(what);
  }
  if (!pass) channel_->open(ctx, dst, plain);
}

void Collectives::broadcast(std::span<std::byte> data, int root, std::uint64_t seq) {
  const int p = t_.size();
  const int r = t_.rank();
  if (root < 0 || root >= p) throw RunError("broadcast: root " + std::to_string(root) + " out of range");
  if (p == 1) return;
  const int prev = (r + p - 1) % p;
  const int next = (r + 1) % p;
  const bool forward = next != root;  // the last rank of the chain only receives
  // Chain position: the root is hop 0, its successor receives at hop 0 and sends at hop 1, ...
  const auto pos = static_cast<std::uint32_t>((r - root + p) % p);
  const std::size_t nseg = (data.size() + segment_bytes_ - 1) / segment_bytes_;

  // Two sends in flight, each with its own wire buffer: segment k+1 is sealed while k is on the wire.
  std::array<std::vector<std::byte>, 2> wire_out;
  std::array<Request, 2> sends;
  std::array<MessageContext, 2> send_ctx;
  for (std::size_t k = 0; k < nseg; ++k) {
    const std::size_t off = k * segment_bytes_;
    const auto seg = data.subspan(off, std::min(segment_bytes_, data.size() - off));
    const auto k32 = static_cast<std::uint32_t>(k);
    if (r != root) {
      recv_opened(prev, tags::kBroadcast,
                  make_ctx(MessagePhase::Broadcast, seq, pos - 1, 0, k32, root, prev, r, seg.size()), seg);
    }
    if (forward) {
      const std::size_t b = k % 2;
      if (sends[b].pending()) wait(sends[b], send_ctx[b]);  // its wire buffer is about to be reused
      send_ctx[b] = make_ctx(MessagePhase::Broadcast, seq, pos, 0, k32, root, r, next, seg.size());
      send_sealed(next, tags::kBroadcast, send_ctx[b], seg, wire_out[b], sends[b]);
    }
  }
  for (std::size_t b = 0; b < 2; ++b) {
    if (sends[b].pending()) wait(sends[b], send_ctx[b]);
  }
}

void Collectives::barrier(std::uint64_t seq) {
  const int p = t_.size();
  const int r = t_.rank();
  std::vector<std::byte> wire;  // a sealing channel's tag for the empty payload
  std::uint32_t round = 0;
  for (int dist = 1; dist < p; dist *= 2, ++round) {
    const int to = (r + dist) % p;
    const int from = (r - dist + p) % p;
    const auto out_ctx = make_ctx(MessagePhase::Barrier, seq, round, round, 0, r, r, to, 0);
    const auto in_ctx = make_ctx(MessagePhase::Barrier, seq, round, round, 0, from, from, r, 0);
    Request send;
    send_sealed(to, tags::kBarrier, out_ctx, {}, wire, send);
    recv_opened(from, tags::kBarrier, in_ctx, {});
    wait(send, out_ctx);
  }
}

std::vector<std::byte> Collectives::allgather(std::span<const std::byte> mine, std::uint64_t seq) {
  const int p = t_.size();
  const int r = t_.rank();
  const std::size_t n = mine.size();
  std::vector<std::byte> all(n * static_cast<std::size_t>(p));  // (P, n), rank order
  std::copy(mine.begin(), mine.end(),
            all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)));
  const int prev = (r + p - 1) % p;
  const int next = (r + 1) % p;
  std::vector<std::byte> wire;
  // Hop s: pass on block (r - s), receive block (r - s - 1): after P-1 hops every block is everywhere.
  for (int s = 0; s + 1 < p; ++s) {
    const int out_block = (r - s + p) % p;
    const int in_block = (r - s - 1 + 2 * p) % p;
    const auto hop = static_cast<std::uint32_t>(s);
    const auto out_ctx = make_ctx(MessagePhase::BlobAllgather, seq, hop,
                                  static_cast<std::uint32_t>(out_block), 0, out_block, r, next, n);
    const auto in_ctx = make_ctx(MessagePhase::BlobAllgather, seq, hop, static_cast<std::uint32_t>(in_block),
                                 0, in_block, prev, r, n);
    Request send;
    send_sealed(next, tags::kAllgather, out_ctx,
                std::span<const std::byte>(all).subspan(n * static_cast<std::size_t>(out_block), n), wire,
                send);
    recv_opened(prev, tags::kAllgather, in_ctx,
                std::span(all).subspan(n * static_cast<std::size_t>(in_block), n));
    wait(send, out_ctx);
  }
  return all;
}

int first_mismatch(std::span<const std::byte> gathered, std::size_t blob) {
  if (blob == 0) return -1;
  const auto first = gathered.first(blob);
  for (std::size_t i = 1; i * blob < gathered.size(); ++i) {
    if (!std::equal(first.begin(), first.end(), gathered.begin() + static_cast<std::ptrdiff_t>(i * blob))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace tt::comm
