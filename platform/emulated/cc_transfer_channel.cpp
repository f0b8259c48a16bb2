#include "platform/emulated/cc_transfer_channel.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "core/precise_wait.h"

namespace tt::platform {

CcTransferChannel::CcTransferChannel(comm::Channel& inner, double toll_us, Profiler* profiler,
                                     RunClock* clock)
    : inner_(inner),
      toll_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(toll_us))),
      toll_us_(toll_us),
      prof_(profiler),
      clock_(clock != nullptr && clock->is_virtual() ? clock : nullptr) {
  if (!(toll_us > 0)) throw InputError("the cost of a CC transfer must be > 0 us (--cc-transfer-us)");
}

std::string CcTransferChannel::name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, ", cc transfers (%.0f us each)", toll_us_);
  return inner_.name() + buf;
}

long CcTransferChannel::crossings() const {
  std::lock_guard lock(mu_);
  return crossings_;
}

void CcTransferChannel::cross(std::size_t n) {
  if (n == 0) return;
  ScopedPhase p(prof_, Phase::Stage, Lane::Comm, "cc transfer");
  if (clock_ != nullptr) {
    // One thread crosses (the ring's): the bridge is free whenever it asks.
    std::lock_guard lock(mu_);
    crossings_ += static_cast<long>(n);
    clock_->elapse(toll_us_ * 1e-6 * static_cast<double>(n));
    return;
  }
  Clock::time_point done;
  {
    // Book the bridge first, then wait outside the lock: a second thread's crossings queue behind.
    std::lock_guard lock(mu_);
    const auto start = std::max(Clock::now(), bridge_free_);
    done = start + toll_ * static_cast<Clock::rep>(n);
    bridge_free_ = done;
    crossings_ += static_cast<long>(n);
  }
  precise_wait_until(done);
}

// Device -> host before the host can seal.
void CcTransferChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                             std::span<std::byte> wire) {
  cross(1);
  inner_.seal(ctx, plain, wire);
}

void CcTransferChannel::seal_batch(std::span<const SealJob> jobs) {
  cross(jobs.size());
  inner_.seal_batch(jobs);
}

// Host -> device once the plaintext has been checked.
void CcTransferChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                             std::span<std::byte> plain) {
  inner_.open(ctx, wire, plain);
  cross(1);
}

void CcTransferChannel::open_batch(std::span<const OpenJob> jobs) {
  inner_.open_batch(jobs);
  cross(jobs.size());
}

}  // namespace tt::platform
