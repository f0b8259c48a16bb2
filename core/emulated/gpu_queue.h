// EmulatedGpuQueue: one stream of an emulated GPU. Work items are durations; they run one after
// another, starting when the previous one ends or when they are enqueued, whichever is later.
//
// The caller may run ahead of the queue by up to `slack` (a GPU's launch queue absorbs short kernels
// the same way, and a wait shorter than the sleep granularity costs more than it models); once it is
// further ahead, run() waits (precise_wait_until) until the queue has caught up. wait() waits for everything
// enqueued so far, which is what a synchronising call (a copy to the host, a reduction returned to the host)
// costs.
//
// Thread-safe: the compute thread and the communication thread may share one stream.
//
// Virtual time (a clock that is_virtual(), Note [Virtual time] in run_clock.h): nothing is waited
// for. run() books the work on the stream after whatever is queued and after the caller's time, and
// the caller's time moves to its end (the host waits for each op: its own time is not modelled, so
// running ahead would only hide the op from the phase it belongs to).
#pragma once
#include <chrono>
#include <mutex>

#include "core/run_clock.h"

namespace tt {

class EmulatedGpuQueue {
 public:
  using Clock = std::chrono::steady_clock;
  struct Span {
    Clock::time_point start, end;
  };
  explicit EmulatedGpuQueue(Clock::duration slack = std::chrono::microseconds(50), RunClock* clock = nullptr)
      : slack_(slack), clock_(clock != nullptr && clock->is_virtual() ? clock : nullptr) {}
  EmulatedGpuQueue(const EmulatedGpuQueue&) = delete;
  EmulatedGpuQueue& operator=(const EmulatedGpuQueue&) = delete;

  // Enqueues `seconds` of GPU work; returns when it starts and ends (after waiting for the end if that
  // is more than `slack` ahead of the caller).
  Span run(double seconds);
  // Returns once everything enqueued so far has run.
  void wait();
  // Returns once the queue has reached `t` (a Span's end).
  static void wait_until(Clock::time_point t);
  // Total work enqueued so far, seconds.
  double seconds() const;

 private:
  const Clock::duration slack_;
  RunClock* const clock_;  // virtual time; null: wall-clock waits
  mutable std::mutex mu_;
  Clock::time_point due_{};
  double seconds_ = 0;
};

}  // namespace tt
