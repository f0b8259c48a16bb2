// SealStreams: everything a sealed inter-rank message needs except the AEAD call itself — which key
// stream it belongs to, that stream's key epoch (ratchet), its position in the stream (which tee/ turns
// into the AEAD's nonce), its associated data and its clear header (docs/design.md §5; the wire format and
// stream rules are in sealed_channel.h).
//
// SealedChannel runs the AEAD on the CPU (OpenSSL); the GPU codec (comm/cuda/gpu_sealing_codec.h) runs it
// on the GPU from the same tickets.
//
// Note [One counter per message, CPU or GPU]: one SealStreams object per rank, shared by the CPU
// channel and the GPU codec, issues every ticket (stream, epoch, position). A stream's
// counter advances once per message whichever side seals it, in the order the collectives run, so a
// CPU and a GPU seal the same message identically and the two sides can take turns on one stream (the
// ring on the GPU, broadcasts and checks on the host) without ever reusing a position under a key.
// Never build a second SealStreams for a rank: a side can only seal at positions drawn from it (a
// tee::StreamPosition is made by the stream's tee::MessageCounter and nothing else).
//
// Threads: one thread at a time (the trainer serialises the main thread's collectives and the reducer's).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "core/profiler.h"
#include "tee/crypto/aead.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/ratchet.h"
#include "tee/crypto/stream_position.h"
#include "tee/errors.h"

namespace tt::comm {

// A sealed message that failed to open (tampered, replayed, reordered, truncated, wrong key or epoch).
// An IntegrityError, so main maps it to exit code 3. what() is one line:
//   "rank 1: sealed message from rank 0 failed to open (tag mismatch: tampered or wrong key) at step 3,
//    bucket 0, phase scatter_reduce, hop 0, chunk 2, segment 0, origin 0, sender 0, receiver 1, 4096 bytes"
class ChannelIntegrityError : public IntegrityError {
 public:
  ChannelIntegrityError(int rank, int peer, const MessageContext& ctx, const std::string& reason);
  int rank() const { return rank_; }
  int peer() const { return peer_; }
  const MessageContext& context() const { return ctx_; }
  const std::string& reason() const { return reason_; }

 private:
  int rank_;
  int peer_;
  MessageContext ctx_;
  std::string reason_;
};

// The secrets a sealing channel starts from (32 bytes each), typed by purpose (tee/identity/traffic_keys.h):
// the two ring-link streams' secrets (each the epoch-0 secret of its ratchet) and the group's traffic secret,
// from which the group and off-ring pair streams' secrets are derived. SessionKeys::channel_keys()
// (secure_session.h) derives them from the attested handshake.
struct ChannelKeys {
  tee::StreamSecret send;         // ring link rank -> next
  tee::StreamSecret recv;         // ring link prev -> rank
  tee::GroupTrafficSecret group;  // shared by all ranks: group and off-ring pair streams
};

struct SealedChannelOptions {
  int rank = 0;
  int world_size = 1;
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
  tee::RekeyPolicy rekey{};
  std::array<std::uint8_t, 16> run_id{};
  std::size_t crypto_threads = 1;  // --crypto-threads; parallelism() of the CPU channel
};

// One key of one stream for one epoch. Immutable once built; shared by the tickets that use it, so a
// batch may straddle a rekey while the ratchet itself has already wiped the old secret.
struct EpochKey {
  std::uint64_t epoch = 0;
  tee::TrafficKey key;
};

inline constexpr std::size_t kSealHeaderSize = 12;  // be32 epoch || be64 counter
inline constexpr std::size_t kSealAadSize = 75;
inline constexpr std::size_t kSealOverhead = tee::kTagSize + kSealHeaderSize;

// What one message's AEAD call needs: wire = AEAD(key, at, aad, plain) || tag || header. Made only by
// SealStreams::next (a position cannot be made up).
struct SealTicket {
  MessageContext ctx;
  std::shared_ptr<const EpochKey> key;
  std::size_t stream = 0;  // index of the key stream (stable: for per-stream AEAD caches)
  tee::StreamPosition at;  // (sender, counter of the stream under this epoch's key)
  std::array<std::uint8_t, kSealAadSize> aad{};
  std::array<std::uint8_t, kSealHeaderSize> header{};
};

class SealStreams {
 public:
  SealStreams(SealedChannelOptions options, ChannelKeys keys, Profiler* profiler = nullptr);
  ~SealStreams();
  SealStreams(const SealStreams&) = delete;
  SealStreams& operator=(const SealStreams&) = delete;

  // The next message on ctx's stream, `length` plaintext bytes (the caller's buffer size: on the
  // receiving side the size it expects). Sealing: ctx.sender must be this rank; opening: this rank
  // must be the receiver (or a group member other than the sender). Rekeys when the epoch is spent.
  SealTicket next(const MessageContext& ctx, std::uint64_t length, bool sealing);

  // After an open: "" when the tag verified and the wire's clear header says what the receiver
  // expected, otherwise why not (the header is read only to explain a failure, and checked after a
  // good open so that no wire byte can change unnoticed).
  static std::string open_failure(bool tag_ok, const std::uint8_t* wire_header, const SealTicket& t);
  // The exception for a message that failed to open on this rank.
  ChannelIntegrityError failure(const MessageContext& ctx, const std::string& reason) const;
  // The exception for a wire buffer of the wrong size (`wire` bytes for `plain` plaintext bytes).
  ChannelIntegrityError wrong_length(const MessageContext& ctx, std::size_t wire, std::size_t plain) const;

  // Profiler counters of one batch: messages, ring messages, plaintext bytes.
  void count(bool sealing, std::size_t messages, std::size_t ring_messages, std::uint64_t bytes) const;

  const SealedChannelOptions& options() const { return opt_; }
  std::size_t stream_count() const { return streams_.size(); }
  // Key epochs moved past so far on this rank (all streams, sealing and opening).
  std::uint64_t rekeys() const { return rekeys_; }

 private:
  struct Stream;
  bool may_use(const MessageContext& ctx, bool sealing) const;
  tee::StreamSecret derived_secret(const MessageContext& ctx) const;
  Stream& stream_for(const MessageContext& ctx, bool sealing);

  SealedChannelOptions opt_;
  ChannelKeys keys_;
  Profiler* prof_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::uint64_t rekeys_ = 0;
};

}  // namespace tt::comm
