// EmulatedDeviceChannel: the gradient ring's channel when `fast` seals on the GPU (--tee-device-crypto)
// and the GPU itself is emulated (--compute emulate).
//
// Under emulation everything a GPU does is a wait computed from a rate: forward and backward from
// FLOPs, the optimizer from memory bandwidth, and here the GPU's AES-GCM from its measured throughput
// (`bench_gpu_aead` on an H200; GpuSpec::aead_gbps). The gradients of an emulated model are synthetic,
// so this channel moves them as plaintext (pass-through, zero copies) and charges each message the
// time the GPU would take to seal or open it: bytes / rate, queued like a stream of GPU kernels (a
// wait only once the queue is ahead of the host by more than a few microseconds). Message and byte
// counters and the seal/open phases are reported as for real sealing, so the message arithmetic of
// docs/design.md §5 still holds (with forward-ciphertext all-gather, only the owner's hop 0 seals).
//
// Never used with real data: only the emulated platform builds it (emulated_platform.cpp). Attestation,
// key agreement, sealed ingress and every other collective still use the real SealedChannel.
#pragma once
#include <string>

#include "comm/channel.h"
#include "core/emulated/gpu_queue.h"
#include "core/profiler.h"

namespace tt::platform {

class EmulatedDeviceChannel final : public comm::Channel {
 public:
  // aead_gbps: the emulated GPU's AES-GCM throughput in GB/s (1e9 bytes/s), > 0. `queue`: the GPU
  // stream it runs on, shared with the ring's adds (EmulatedBackend::comm_stream(); null: a stream of
  // the channel's own).
  EmulatedDeviceChannel(double aead_gbps, bool forward_all_gather, Profiler* profiler,
                        EmulatedGpuQueue* queue = nullptr);

  std::string name() const override;  // "emulated-gpu-aead(150 GB/s)"
  std::size_t overhead() const override { return 0; }
  bool pass_through() const override { return true; }
  void seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
            std::span<std::byte> wire) override;
  void open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
            std::span<std::byte> plain) override;
  void charge_seal(const comm::MessageContext& ctx, std::size_t bytes) override;
  void charge_open(const comm::MessageContext& ctx, std::size_t bytes) override;
  comm::SendSchedule send_schedule() const override {
    return comm::SendSchedule::InOrder;
  }  // charges per message

  double modeled_seconds() const { return modeled_s_; }

 private:
  void charge(Phase phase, std::size_t bytes);

  double bytes_per_second_;
  bool forward_ag_;
  Profiler* prof_;
  double modeled_s_ = 0;
  EmulatedGpuQueue own_queue_;
  EmulatedGpuQueue* queue_;
};

}  // namespace tt::platform
