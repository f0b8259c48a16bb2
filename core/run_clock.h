// RunClock: what time it is for the calling thread of a run. Every timer of a run reads it (the
// profiler's phases and trace, the trainer's step times, the reducer's hand-offs), so a run measured
// in wall-clock time and a run computed in virtual time share one code path.
//
// Note [Virtual time]: an emulated run (--compute emulate, --time virtual) is a model of a cluster
// executed by the real engine code. Its time is computed, never slept: each thread of a rank (the
// training thread, which drives the GPU's compute stream, and the reducer's communication thread, which
// drives its comm stream, the host's crypto and the links) has its own virtual time. A modelled cost
// advances the calling thread's time; waiting for something that happened elsewhere (a bucket made
// final by backward, a message sent by a neighbour at virtual time t) is advance_to(t), a max. Each
// modelled resource is used by one thread only, in an order the code fixes (buckets in launch order,
// segments in ring order), so the result is a function of the workload and the modelled platform:
// the same on any machine, idle or loaded, with any number of ranks per core.
#pragma once
#include <chrono>

namespace tt {

class RunClock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  RunClock() = default;
  virtual ~RunClock() = default;
  RunClock(const RunClock&) = delete;
  RunClock& operator=(const RunClock&) = delete;

  // The calling thread's time.
  virtual TimePoint now() const = 0;
  // The calling thread cannot go on before `t` (it waited for something that happened at `t`).
  // Wall clock: it has already waited for real, nothing to do. Virtual: its time becomes max(now, t).
  virtual void advance_to(TimePoint t) = 0;
  // The calling thread spends `seconds` on modelled work. Wall clock: nothing (real work takes its
  // own time). Virtual: its time moves on by `seconds`.
  virtual void elapse(double seconds) = 0;
  virtual bool is_virtual() const = 0;
};

// Real time (std::chrono::steady_clock): every real-compute run, and emulated runs with --time wall.
class WallClock final : public RunClock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void advance_to(TimePoint /*t*/) override {}
  void elapse(double /*seconds*/) override {}
  bool is_virtual() const override { return false; }
};

// Seconds as a duration of the clock (rounded to its tick): every modelled cost goes through here.
inline RunClock::TimePoint::duration clock_seconds(double s) {
  return std::chrono::duration_cast<RunClock::TimePoint::duration>(std::chrono::duration<double>(s));
}

}  // namespace tt
