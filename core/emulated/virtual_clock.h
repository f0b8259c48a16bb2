// VirtualClock: the virtual time of one rank of an emulated run (Note [Virtual time], run_clock.h).
// One time per thread that asks: the training thread and the reducer's communication thread. A thread
// starts at time zero when it first asks (the communication thread then waits for its first bucket).
#pragma once
#include <deque>
#include <mutex>
#include <thread>

#include "core/run_clock.h"

namespace tt {

class VirtualClock final : public RunClock {
 public:
  TimePoint now() const override;
  void advance_to(TimePoint t) override;
  void elapse(double seconds) override;
  bool is_virtual() const override { return true; }

 private:
  struct ThreadTime {
    std::thread::id thread;
    TimePoint t{};
  };
  ThreadTime& mine() const;  // the calling thread's entry (added on first use); mu_ held

  mutable std::mutex mu_;
  mutable std::deque<ThreadTime> threads_;  // a handful: linear search
};

}  // namespace tt
