#include "platform/emulated/emulated_device_channel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace tt::platform {
EmulatedDeviceChannel::EmulatedDeviceChannel(double aead_gbps, bool forward_all_gather, Profiler* profiler,
                                             EmulatedGpuQueue* queue)
    : bytes_per_second_(aead_gbps * 1e9),
      forward_ag_(forward_all_gather),
      prof_(profiler),
      queue_(queue != nullptr ? queue : &own_queue_) {
  if (!(aead_gbps > 0)) throw InputError("emulated GPU AES-GCM rate must be > 0 GB/s (--gpu-aead-gbps)");
}

std::string EmulatedDeviceChannel::name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "emulated-gpu-aead(%.0f GB/s)", bytes_per_second_ * 1e-9);
  return buf;
}

// Direct seal/open (collectives other than the ring never get this channel, but keep it usable).
void EmulatedDeviceChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                                 std::span<std::byte> wire) {
  if (!plain.empty()) std::memcpy(wire.data(), plain.data(), plain.size());
  charge_seal(ctx, plain.size());
}

void EmulatedDeviceChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                                 std::span<std::byte> plain) {
  if (!plain.empty()) std::memcpy(plain.data(), wire.data(), plain.size());
  charge_open(ctx, plain.size());
}

void EmulatedDeviceChannel::charge_seal(const comm::MessageContext& ctx, std::size_t bytes) {
  // Forward-ciphertext all-gather (the ring's, hier's in each sub-group): the owner seals its finished
  // chunk once (hop 0); later hops forward that ciphertext unchanged.
  if (forward_ag_ && comm::is_forwardable_phase(ctx.phase) && ctx.hop > 0) return;
  if (prof_ != nullptr) {
    prof_->add(Counter::MessagesSealed, 1);
    if (comm::is_allreduce_phase(ctx.phase)) prof_->add(Counter::RingSealed, 1);
    prof_->add(Counter::BytesSealed, static_cast<int64_t>(bytes));
  }
  charge(Phase::Seal, bytes);
}

void EmulatedDeviceChannel::charge_open(const comm::MessageContext& ctx, std::size_t bytes) {
  if (prof_ != nullptr) {
    prof_->add(Counter::MessagesOpened, 1);
    if (comm::is_allreduce_phase(ctx.phase)) prof_->add(Counter::RingOpened, 1);
    prof_->add(Counter::BytesOpened, static_cast<int64_t>(bytes));
  }
  charge(Phase::Open, bytes);
}

void EmulatedDeviceChannel::charge(Phase phase, std::size_t bytes) {
  const double s = static_cast<double>(bytes) / bytes_per_second_;
  modeled_s_ += s;
  // The ring may send a segment only once it is sealed, and use a received one only once it is opened.
  const EmulatedGpuQueue::Span span = queue_->run(s);
  if (prof_ != nullptr) {
    prof_->add_time(phase, s);
    if (prof_->tracing())
      prof_->record(phase == Phase::Seal ? "seal (emulated GPU)" : "open (emulated GPU)", Lane::Crypto,
                    span.start, span.end);
  }
}

}  // namespace tt::platform
