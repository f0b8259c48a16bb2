// VirtualSealChannel: the ring's sealing channel of an emulated run in virtual time (Note [Virtual
// time], core/run_clock.h). The host that seals for an emulated GPU is modelled, not measured:
// each message costs its bytes at the modelled host's AES-GCM rate, spread over its crypto cores, and
// the calling thread's virtual time moves on by that much. The bytes themselves are synthetic, so
// what the real inner channel seals is a token: the first min(length, 16) bytes of
// be64(length) || be64(~length), sealed under the message's own context and stream. The token is
// what crosses the (emulated) link, so the teaching adversary's flips, replays, reorders and
// truncations hit real ciphertext and fail the real tag check (exit 3), as they would on real data.
//
// Counters and the seal/open phases report the modelled messages (full lengths), so docs/design.md
// §5's message arithmetic holds. Only for synthetic gradients: the emulated platform builds it
// for --compute emulate --time virtual alone.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "core/emulated/emulated_backend.h"
#include "core/emulated/emulated_gpu.h"
#include "core/profiler.h"
#include "core/run_clock.h"

namespace tt::platform {

// The modelled host's default AES-256-GCM rate, GB/s (core/emulated/emulated_gpu.h).
inline constexpr double kModelledHostAeadGbps = kIspassHostAeadGbps;

// What sealing one rank's ring messages costs: the host of an emulated GPU's confidential VM, or the GPU.
struct CryptoCostModel {
  std::string where = "host";  // who seals: "host" (cc, or fast on the host) or "GPU" (fast's device crypto)
  double aead_gbps = kModelledHostAeadGbps;  // AES-256-GCM of one core (or of the GPU), GB/s
  int cores = 1;                             // cores sealing this rank's messages at once
  double per_message_us = 0;                 // software cost per message beyond the cipher (0: none)
  bool bounce_reencrypt = false;  // H100 CC's bounce buffers encrypted again on the host: 2x the bytes
  // Seconds to seal or open `messages` messages of `bytes` in all.
  double seconds(std::size_t messages, std::size_t bytes) const;
  std::string describe() const;  // "host AES-GCM 3.36 GB/s x 1 core"
};

class VirtualSealChannel final : public comm::Channel {
 public:
  static constexpr std::size_t kTokenBytes = 16;

  // `inner` (a sealing channel) and `clock` must outlive this channel. `sms`: the GPU whose SMs the
  // charged time holds (fast's device crypto: Note [GPU crypto shares the SMs]); null: the host seals.
  VirtualSealChannel(comm::Channel& inner, CryptoCostModel host, RunClock& clock, Profiler* profiler,
                     EmulatedBackend* sms = nullptr);

  std::string name() const override;
  std::size_t overhead() const override { return inner_.overhead(); }
  bool pass_through() const override { return false; }
  comm::MemorySpace memory() const override { return inner_.memory(); }
  std::size_t parallelism() const override { return inner_.parallelism(); }
  void seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
            std::span<std::byte> wire) override;
  void open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
            std::span<std::byte> plain) override;
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;

  // Bytes of each message that must cross the link: the sealed token.
  std::size_t carried_bytes() const { return kTokenBytes + overhead(); }
  const CryptoCostModel& host() const { return host_; }

 private:
  using Token = std::array<std::byte, kTokenBytes>;
  static Token token_of(std::size_t length);
  void charge(Phase phase, std::size_t messages, std::size_t bytes, std::size_t token_bytes);

  comm::Channel& inner_;
  CryptoCostModel host_;
  RunClock& clock_;
  Profiler* prof_;
  EmulatedBackend* sms_;
  std::vector<Token> tokens_;  // one per job of the current batch
  std::vector<SealJob> seal_jobs_;
  std::vector<OpenJob> open_jobs_;
};

}  // namespace tt::platform
