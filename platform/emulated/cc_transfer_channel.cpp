#include "platform/emulated/cc_transfer_channel.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "core/precise_wait.h"

namespace tt::platform {

CcTransferChannel::CcTransferChannel(comm::Channel& inner, double toll_us, Profiler* profiler,
                                     RunClock* clock, CcCopyPerByte per_byte)
    : comm::ChannelDecorator(inner),
      toll_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(toll_us))),
      toll_us_(toll_us),
      per_byte_(per_byte),
      prof_(profiler),
      clock_(clock != nullptr && clock->is_virtual() ? clock : nullptr) {
  if (!(per_byte.d2h_s >= 0 && per_byte.h2d_s >= 0))
    throw InputError("the per-byte cost of a CC transfer must be >= 0");
  // A crossing costs its fixed toll, its bytes, or both (fast's crossings on `none` have no toll).
  if (!(toll_us > 0 || (toll_us == 0 && (per_byte.d2h_s > 0 || per_byte.h2d_s > 0))))
    throw InputError("the cost of a CC transfer must be > 0 us (--cc-transfer-us)");
}

std::string CcTransferChannel::name() const {
  char buf[128];
  if (per_byte_.d2h_s > 0 || per_byte_.h2d_s > 0)
    std::snprintf(buf, sizeof buf, ", cc transfers (%.1f us each + %.3f/%.3f ns/B)", toll_us_,
                  per_byte_.d2h_s * 1e9, per_byte_.h2d_s * 1e9);
  else
    std::snprintf(buf, sizeof buf, ", cc transfers (%.0f us each)", toll_us_);
  return inner().name() + buf;
}

long CcTransferChannel::crossings() const {
  std::lock_guard lock(mu_);
  return crossings_;
}

void CcTransferChannel::cross(std::size_t n, std::size_t bytes, double s_per_byte) {
  if (n == 0) return;
  ScopedPhase p(prof_, Phase::Stage, Lane::Comm, "cc transfer");
  const double copy_s = static_cast<double>(bytes) * s_per_byte;
  if (clock_ != nullptr) {
    // One thread crosses (the ring's): the bridge is free whenever it asks.
    std::lock_guard lock(mu_);
    crossings_ += static_cast<long>(n);
    clock_->elapse(toll_us_ * 1e-6 * static_cast<double>(n) + copy_s);
    return;
  }
  Clock::time_point done;
  {
    // Book the bridge first, then wait outside the lock: a second thread's crossings queue behind.
    std::lock_guard lock(mu_);
    const auto start = std::max(Clock::now(), bridge_free_);
    done = start + toll_ * static_cast<Clock::rep>(n) +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(copy_s));
    bridge_free_ = done;
    crossings_ += static_cast<long>(n);
  }
  precise_wait_until(done);
}

// Device -> host before the host can seal.
void CcTransferChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                             std::span<std::byte> wire) {
  cross(1, plain.size(), per_byte_.d2h_s);
  inner().seal(ctx, plain, wire);
}

void CcTransferChannel::seal_batch(std::span<const SealJob> jobs) {
  std::size_t bytes = 0;
  for (const SealJob& j : jobs) bytes += j.plain.size();
  cross(jobs.size(), bytes, per_byte_.d2h_s);
  inner().seal_batch(jobs);
}

// Host -> device once the plaintext has been checked.
void CcTransferChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                             std::span<std::byte> plain) {
  inner().open(ctx, wire, plain);
  cross(1, plain.size(), per_byte_.h2d_s);
}

void CcTransferChannel::open_batch(std::span<const OpenJob> jobs) {
  inner().open_batch(jobs);
  std::size_t bytes = 0;
  for (const OpenJob& j : jobs) bytes += j.plain.size();
  cross(jobs.size(), bytes, per_byte_.h2d_s);
}

}  // namespace tt::platform
