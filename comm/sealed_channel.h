// SealedChannel: the TEE-mode Channel (DESIGN.md §5). Every message is sealed with an AEAD under a
// key chosen by who sends it to whom, a deterministic nonce, and associated data that binds the
// message to exactly one place in the run.
//
// Wire format (overhead() = 16 + 12 = 28 bytes):
//
//   ciphertext (length bytes) || tag (16) || be32(key epoch) || be64(nonce counter)
//
// The trailing 12-byte header is DIAGNOSTIC ONLY: the receiver opens every message with the epoch and
// counter it expects from its own count of the stream, and reads the header only after a failure, to
// say whether the message was replayed/reordered ("unexpected counter"), out of key epoch ("wrong
// epoch") or forged/under another key ("tag mismatch").
//
// Key streams. A message (sender s, receiver d) belongs to exactly one stream, named the same way on
// both ends, each with its own KeyRatchet and its own nonce counter:
//   d == s+1 (mod P)  ring link s -> s+1   : the attested link secret (per-link keys, TEE cc)
//   d == kAnyRank     group stream of s    : HKDF(group secret, s) (forward-ciphertext all-gather,
//                                             opened by every other rank)
//   any other d       pair stream s -> d   : HKDF(group secret, s, d) (dissemination barrier with
//                                             P >= 3, and anything else off the ring)
// Only s ever seals on a stream, so the nonce (origin = s, counter) never repeats under a key; both
// ends see the stream's messages in the same order (one sender, non-overtaking transport, every rank
// runs the same collectives in the same order), so both count the same messages, rekey at the same
// message, and agree on every counter without sending it.
//
// Associated data (big-endian, 75 bytes): "TTM1" || run id (16) || epoch (8) || step (8) || bucket (4)
// || phase (1) || hop (4) || chunk (4) || segment (4) || origin (4) || sender (4) || receiver (4) ||
// length (8) || cipher (1) || stream kind (1). Ranks are 32-bit two's complement (kAnyRank = ffffffff);
// the length is the plaintext size the caller's buffer has (the receiver's expectation, not the wire's).
//
// Threads: seal/open/seal_batch/open_batch are called by one thread at a time (comm/README.md). With
// crypto_threads = T > 1, a batch is spread over the caller and T-1 persistent workers, each with its
// own tee::Aead instances; keys, epochs and nonces are assigned in job order before dispatch, so the
// result does not depend on scheduling.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "engine/core/profiler.h"
#include "tee/aead.h"
#include "tee/errors.h"
#include "tee/ratchet.h"
#include "tee/secure_bytes.h"

namespace tt::comm {

// A sealed message that failed to open (tampered, replayed, reordered, truncated, wrong key or epoch).
// An IntegrityError, so main maps it to exit code 3. what() is one line:
//   "rank 1: sealed message from rank 0 failed to open (tag mismatch: tampered or wrong key) at step 3,
//    bucket 0, phase scatter_reduce, hop 0, chunk 2, segment 0, origin 0, sender 0, receiver 1, 4096 bytes"
class ChannelIntegrityError : public tee::IntegrityError {
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

// The secrets a SealedChannel starts from (32 bytes each; each is the epoch-0 secret of a ratchet).
// SessionKeys::channel_keys() (secure_session.h) derives them from the attested handshake.
struct ChannelKeys {
  tee::SecretBytes send;   // ring link rank -> next
  tee::SecretBytes recv;   // ring link prev -> rank
  tee::SecretBytes group;  // shared by all ranks: group and off-ring pair streams
};

struct SealedChannelOptions {
  int rank = 0;
  int world_size = 1;
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
  tee::RekeyPolicy rekey{};
  std::array<std::uint8_t, 16> run_id{};
  std::size_t crypto_threads = 1;    // --crypto-threads; parallelism() of the channel
  bool debug_record_nonces = false;  // keep every (key, nonce) sealed, for tests
};

// One sealed message, as recorded with debug_record_nonces.
struct NonceRecord {
  std::string key_fingerprint;  // SecretBytes::fingerprint() of the AEAD key that sealed it
  std::uint64_t epoch = 0;
  std::uint32_t origin = 0;
  std::uint64_t counter = 0;
  bool operator==(const NonceRecord&) const = default;
};

class SealedChannel final : public Channel {
 public:
  static constexpr std::size_t kHeaderSize = 12;  // be32 epoch || be64 counter
  static constexpr std::size_t kOverhead = tee::kTagSize + kHeaderSize;

  SealedChannel(SealedChannelOptions options, ChannelKeys keys, Profiler* profiler = nullptr);
  ~SealedChannel() override;

  std::string name() const override;  // "sealed(aes-256-gcm)"
  std::size_t overhead() const override { return kOverhead; }
  bool pass_through() const override { return false; }

  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override;
  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override;

  std::size_t parallelism() const override { return threads_; }
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;

  const SealedChannelOptions& options() const { return opt_; }
  // Key epochs moved past so far on this rank (all streams, sealing and opening).
  std::uint64_t rekeys() const { return rekeys_; }
  // Every message sealed so far (empty unless debug_record_nonces).
  const std::vector<NonceRecord>& nonce_records() const { return nonces_; }

 private:
  struct Stream;
  struct EpochKey;
  struct Task;
  class Pool;

  Stream& stream_for(const MessageContext& ctx, bool sealing);
  // Assigns key, epoch and nonce of the next message on `s`, in the caller thread.
  void assign(Stream& s, std::uint64_t length, Task& task, bool sealing);
  void run(std::vector<Task>& tasks);
  void run_one(Task& task, std::size_t thread);

  SealedChannelOptions opt_;
  ChannelKeys keys_;
  Profiler* prof_;
  std::size_t threads_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::uint64_t rekeys_ = 0;
  std::vector<NonceRecord> nonces_;
  std::vector<Task> tasks_;  // scratch, reused between batches
  // Per thread (0 = the caller), per stream: the Aead of the epoch it last used.
  struct AeadSlot;
  std::vector<std::vector<AeadSlot>> aeads_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace tt::comm
