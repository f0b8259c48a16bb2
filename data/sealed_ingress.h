// How a batch crosses into the rank in TEE mode (docs/design.md §2, §6: the "ingress" crossing).
//
// - Direct (`--tee fast`, Fastrack-style): the dataset key is released to the rank after
//   attestation, so the rank opens the sealed chunks a batch needs itself: one open per chunk.
// - Bounce (`--tee cc`, H100 CC emulation): the "CPU" (the confidential VM, holding the dataset key)
//   opens the chunks, re-seals the assembled batch under a per-rank link key into a staging buffer
//   in "shared memory" (the bounce buffer), and the "device" opens it into the rank's buffer. Every
//   batch is therefore sealed once and opened twice more than in direct mode, as on H100 CC.
//
// An optional throttle caps the ingress rate (GB/s = 1e9 bytes/s), to emulate H100 CC's ~3 GB/s
// encrypted host-to-device bandwidth on hardware whose memory copies are far faster.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/profiler.h"
#include "tee/crypto/aead.h"

namespace tt {

enum class IngressMode { Direct, Bounce };
std::string_view ingress_mode_name(IngressMode m);  // "direct", "bounce"

struct IngressOptions {
  IngressMode mode = IngressMode::Direct;
  tee::Cipher link_cipher = tee::Cipher::Aes256Gcm;  // cipher of the bounce path's staging seals
  std::uint32_t rank = 0;                            // origin of the staging seals' stream
  double gbps = 0;                                   // ingress rate cap in GB/s; 0 = none
};

// Paces a byte stream to at most `gbps` GB/s: a token bucket with no burst allowance. Each batch
// "arrives" when the link has had time to carry it, counted from when the previous one arrived or
// from when this one started moving, whichever is later; pace() sleeps until then. So crypto time
// already spent counts towards the transfer, and the rate over any interval never exceeds the cap.
class IngressThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit IngressThrottle(double gbps) : bytes_per_s_(gbps * 1e9) {}
  bool enabled() const { return bytes_per_s_ > 0; }
  void pace(std::uint64_t bytes, Clock::time_point started);

 private:
  double bytes_per_s_;
  Clock::time_point ready_{};  // when the link finished carrying the previous batch
};

// The bounce buffer: memory the CPU side and the device side of a BounceLink share with the host, which
// can read and write it between the seal and the open (H100 CC stages transfers in unencrypted shared
// memory). A part of the link, so that a test can play that host with a buffer of its own
// (tests/data/data_test_util.h); every run uses SharedBounceBuffer.
class BounceBuffer {
 public:
  virtual ~BounceBuffer() = default;
  // Where the CPU side stages one sealed message of `bytes` bytes (ciphertext || tag).
  virtual tee::MutableByteView stage(std::size_t bytes) = 0;
  // The staged message as the device side finds it.
  virtual tee::ByteView collect() = 0;
};

// Plain memory: the device side finds what the CPU side wrote.
class SharedBounceBuffer final : public BounceBuffer {
 public:
  tee::MutableByteView stage(std::size_t bytes) override {
    bytes_.resize(bytes);
    return bytes_;
  }
  tee::ByteView collect() override { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;  // (bytes + 16) ciphertext || tag
};

// The bounce path between the "CPU" and the "device" of one rank. The link key is random, made
// here and never leaves this object: it stands for the session key H100 CC sets up between the
// driver and the GPU. The CPU side seals on a tee::SealingStream of origin `rank` and the device side
// opens on the matching tee::OpeningStream: each counts the messages itself, so the device takes the
// message's position and associated data from its own count and the batch it asked for, never from
// the staging buffer.
class BounceLink {
 public:
  // `buffer`: the shared memory the messages cross (null: a SharedBounceBuffer).
  BounceLink(tee::Cipher cipher, std::uint32_t rank, Profiler* profiler,
             std::unique_ptr<BounceBuffer> buffer = nullptr);

  // Seals `batch` (CPU side) into the staging buffer, then opens it back into `batch` (device
  // side). (first_sample, count) name the batch in the associated data. Throws
  // IntegrityError ("ingress bounce buffer ... failed to open") if the staging bytes changed.
  void transfer(tee::MutableByteView batch, std::uint64_t first_sample, int count);

  std::uint64_t messages() const { return device_->next_counter(); }

 private:
  std::optional<tee::SealingStream> cpu_;     // seals with the link key
  std::optional<tee::OpeningStream> device_;  // opens with the same key (its own cipher contexts and count)
  std::uint32_t rank_;
  std::unique_ptr<BounceBuffer> buffer_;
  Profiler* profiler_;
};

}  // namespace tt
