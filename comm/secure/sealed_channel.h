// SealedChannel: the TEE-mode Channel (docs/design.md §5). Every message is sealed with an AEAD under a
// key chosen by who sends it to whom, at a deterministic position in its stream (tee/ makes the nonce
// from it), with associated data that binds the message to exactly one place in the run.
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
//   d == kAnyRank in  sub-group stream of s: HKDF(group secret, kind, members, s) (the hierarchical
//     a sub-group                            all-gathers, opened by the sub-group's other members:
//                                            Note [Sub-group streams], comm/channel.h)
// Only s ever seals on a stream, so the nonce (origin = s, counter) never repeats under a key; both
// ends see the stream's messages in the same order (one sender, non-overtaking transport, every rank
// runs the same collectives in the same order), so both count the same messages, rekey at the same
// message, and agree on every counter without sending it.
//
// Associated data (big-endian, 75 bytes): "TTM1" || run id (16) || epoch (8) || step (8) || bucket (4)
// || phase (1) || hop (4) || chunk (4) || segment (4) || origin (4) || sender (4) || receiver (4) ||
// length (8) || cipher (1) || stream kind (1: link 1, group 2, pair 3, sub-group 4). Ranks are 32-bit two's
// complement (kAnyRank = ffffffff); the length is the plaintext size the caller's buffer has (the receiver's
// expectation, not the wire's).
//
// Threads: seal/open/seal_batch/open_batch are called by one thread at a time (comm/README.md). With
// crypto_threads = T > 1, a batch is spread over the caller and T-1 persistent workers, each with its
// own tee::Aead instances; keys, epochs and positions are assigned in job order before dispatch, so the
// result does not depend on scheduling.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/secure/seal_streams.h"
#include "core/profiler.h"

namespace tt::comm {

namespace cuda {
class GpuSealingCodec;
}

class SealedChannel final : public Channel {
 public:
  static constexpr std::size_t kHeaderSize = kSealHeaderSize;
  static constexpr std::size_t kOverhead = kSealOverhead;

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

  const SealedChannelOptions& options() const { return streams_.options(); }
  // Key epochs moved past so far on this rank (all streams, sealing and opening).
  std::uint64_t rekeys() const { return streams_.rekeys(); }

 private:
  // The key streams are shared with exactly one other sealer, the GPU codec that seals this rank's ring
  // messages (comm/cuda/gpu_sealing_codec.h; Note [One counter per message, CPU or GPU],
  // seal_streams.h), built from the channel itself; nothing else sees them or their counters.
  friend class cuda::GpuSealingCodec;
  SealStreams& streams() { return streams_; }

  struct Task;
  struct AeadSlot;
  class Pool;

  void run(std::vector<Task>& tasks);
  void run_one(Task& task, std::size_t thread);

  SealStreams streams_;
  Profiler* prof_;
  std::size_t threads_;
  std::vector<Task> tasks_;  // scratch, reused between batches
  // Per thread (0 = the caller), per stream: the Aead of the epoch it last used.
  std::vector<std::vector<AeadSlot>> aeads_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace tt::comm
