#include "core/emulated/gpu_queue.h"

#include <algorithm>

#include "core/precise_wait.h"

namespace tt {

EmulatedGpuQueue::Span EmulatedGpuQueue::run(double s) {
  Span span;
  if (clock_ != nullptr) {
    std::lock_guard lock(mu_);
    seconds_ += s;
    span.start = std::max(clock_->now(), due_);
    due_ = span.start + clock_seconds(s);
    span.end = due_;
    clock_->advance_to(due_);
    return span;
  }
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu_);
    seconds_ += s;
    span.start = std::max(now, due_);
    due_ = span.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    span.end = due_;
  }
  // Past the slack the caller catches up completely: few long waits (mostly asleep) rather than many
  // short ones (mostly spinning), which would take the cores the host's own threads need.
  if (span.end - now > slack_) wait_until(span.end);
  return span;
}

void EmulatedGpuQueue::wait() {
  Clock::time_point due;
  {
    std::lock_guard lock(mu_);
    due = due_;
  }
  if (clock_ != nullptr) {
    clock_->advance_to(due);
    return;
  }
  wait_until(due);
}

void EmulatedGpuQueue::wait_until(Clock::time_point t) {
  if (Clock::now() < t) precise_wait_until(t);
}

double EmulatedGpuQueue::seconds() const {
  std::lock_guard lock(mu_);
  return seconds_;
}

}  // namespace tt
