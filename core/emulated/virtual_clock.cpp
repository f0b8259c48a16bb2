#include "core/emulated/virtual_clock.h"

#include <algorithm>

namespace tt {

VirtualClock::ThreadTime& VirtualClock::mine() const {
  const std::thread::id id = std::this_thread::get_id();
  for (ThreadTime& t : threads_)
    if (t.thread == id) return t;
  return threads_.emplace_back(ThreadTime{id, TimePoint{}});
}

RunClock::TimePoint VirtualClock::now() const {
  std::lock_guard lock(mu_);
  return mine().t;
}

void VirtualClock::advance_to(TimePoint t) {
  std::lock_guard lock(mu_);
  ThreadTime& m = mine();
  m.t = std::max(m.t, t);
}

void VirtualClock::elapse(double seconds) {
  if (!(seconds > 0)) return;
  std::lock_guard lock(mu_);
  mine().t += clock_seconds(seconds);
}

}  // namespace tt
