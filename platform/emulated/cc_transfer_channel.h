// CcTransferChannel: the fixed cost of H100 CC's bounce-buffer crossings, for gradient messages the
// host seals on behalf of an emulated GPU (--cc-transfer-us, needs --compute emulate).
//
// Under H100 CC a GPU's gradients reach the host sealer only through encrypted bounce buffers: the
// sender's chunk crosses device -> host before it is sealed for the link, and the receiver's opened
// chunk crosses host -> device before the GPU adds it. The per-byte part of a crossing is CPU
// AES-GCM (the measured ~3 GB/s CC copy rate is one core's OpenSSL rate), which `cc` already pays for
// real in SealedChannel. What the emulation lacks is the fixed part: every secure copy is
// synchronous, serialised per context and pays a set-up toll (bounce-buffer allocation, IV and
// driver bookkeeping, synchronisation) whatever its size. Lee et al. (arXiv 2501.11771) put their
// bucket-size finding down to exactly this: "the cost of securing and verifying many small
// transmissions dominates", and larger buckets "cut round-trip counts".
//
// With a GPU in CC mode (--cc-hardware, Note [CC hardware costs] in core/emulated/emulated_gpu.h) a
// crossing also costs its bytes at the measured copy plateau: `per_byte`, the part of that rate beyond
// what the channel inside already charges for the bytes (the host's AES-GCM pass in cc; nothing for
// fast's GPU-sealed ciphertext, which on H100 CC reaches another GPU only through host memory).
//
// This channel wraps the real sealing channel and charges `toll` per crossing: before each seal (the
// device -> host copy of the plaintext) and after each open (the host -> device copy), as a blocking
// wait on one per-rank bridge, so crossings never overlap one another. Everything else (bytes, nonces,
// tags, counters) is the inner channel's. The waits are reported as the `stage` phase (the same phase
// a real GPU's staging copies use). In virtual time (a virtual `clock`, Note [Virtual time] in
// core/run_clock.h) a crossing moves the calling thread's time instead of waiting.
#pragma once
#include <chrono>
#include <mutex>
#include <string>

#include "comm/channel.h"
#include "core/profiler.h"
#include "core/run_clock.h"

namespace tt::platform {

// Seconds per byte of a crossing, each direction (0: the fixed toll only).
struct CcCopyPerByte {
  double d2h_s = 0;  // before a seal: device -> host
  double h2d_s = 0;  // after an open: host -> device
};

class CcTransferChannel final : public comm::ChannelDecorator {
 public:
  using Clock = std::chrono::steady_clock;
  // toll_us: fixed cost of one crossing in microseconds, > 0 (or 0 where per_byte charges the bytes).
  // `inner` must outlive this channel.
  CcTransferChannel(comm::Channel& inner, double toll_us, Profiler* profiler, RunClock* clock = nullptr,
                    CcCopyPerByte per_byte = {});

  std::string name() const override;  // "<inner>, cc transfers (3000 us each)"
  void seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
            std::span<std::byte> wire) override;
  void open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
            std::span<std::byte> plain) override;
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;

  // Crossings charged so far (two per message: one at the sender, one at the receiver).
  long crossings() const;
  double toll_us() const { return toll_us_; }

 private:
  // Blocks until `n` more crossings of `bytes` in all have gone over the bridge (after any still in
  // flight); s_per_byte: the direction's CcCopyPerByte.
  void cross(std::size_t n, std::size_t bytes, double s_per_byte);

  Clock::duration toll_;
  double toll_us_;
  CcCopyPerByte per_byte_;
  Profiler* prof_;
  RunClock* clock_;  // virtual time, else null
  mutable std::mutex mu_;
  Clock::time_point bridge_free_{};
  long crossings_ = 0;
};

}  // namespace tt::platform
