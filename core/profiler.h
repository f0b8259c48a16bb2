// Per-rank phase timers, counters and an optional trace of events (one lane per thread role).
// Thread-safe: the compute thread, the communication thread and crypto workers all report here.
// Times are read from the run's clock (run_clock.h): wall-clock time, or an emulated run's virtual time.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_clock.h"

namespace tt {

enum class Phase : int {
  Data,     // reading / assembling the batch
  Ingress,  // moving the batch into the rank (opening sealed data, bounce path)
  Forward,
  Backward,
  CommExposed,  // waiting for all-reduce after backward has finished
  Seal,         // AEAD seal, summed over all threads
  Open,         // AEAD open, summed over all threads
  Reduce,       // adding received chunks
  Stage,        // device <-> host copies of GPU gradient buckets for the host ring (H100 CC's bounce path)
  Optimizer,    // zeroing the gradients (start of the step), norm, clipping, update
  Checkpoint,
  Validation,   // the validation batches (--val-every, and at the end): inside the timed steps
  Bookkeeping,  // the loop's own work between steps: progress line, --metrics record, --check-replicas
  // Virtual time only (Note [Virtual time], run_clock.h), on the communication thread: of the time a
  // receive made it wait, the part the message's bytes spent crossing the link, and the rest, spent
  // waiting for the neighbour to send it.
  Link,
  Wait,
  Count
};
std::string_view phase_name(Phase p);

enum class Counter : int {
  Buckets,
  MessagesSent,
  BytesSent,
  MessagesReceived,
  BytesReceived,
  MessagesSealed,
  BytesSealed,
  MessagesOpened,
  BytesOpened,
  Rekeys,
  RingSealed,  // messages sealed / opened by the gradient all-reduce alone, whichever algorithm (ring, rd,
  RingOpened,  // rhd; docs/design.md §5's arithmetic): a subset of MessagesSealed / MessagesOpened
  Count
};
std::string_view counter_name(Counter c);

// Trace lanes: Chrome/Perfetto shows one row per lane inside the rank's process.
enum class Lane : int { Compute = 0, Comm = 1, Crypto = 2 };

struct TraceEvent {
  std::string name;
  int lane = 0;
  int64_t begin_us = 0;
  int64_t dur_us = 0;
};

class Profiler {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kPhases = static_cast<int>(Phase::Count);
  static constexpr int kCounters = static_cast<int>(Counter::Count);

  explicit Profiler(bool trace = false) : trace_(trace), origin_(Clock::now()) {}
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // From now on times come from `clock` (which must outlive the profiler); the trace starts at its
  // present time.
  void use_clock(RunClock& clock) {
    clock_ = &clock;
    origin_ = clock.now();
  }
  RunClock& clock() const { return *clock_; }
  // The calling thread's time on the run's clock.
  Clock::time_point now() const { return clock_->now(); }
  bool virtual_time() const { return clock_->is_virtual(); }

  void add_time(Phase p, double seconds) { phase_ns_[idx(p)].fetch_add(static_cast<int64_t>(seconds * 1e9)); }
  void add(Counter c, int64_t v) { counters_[idx(c)].fetch_add(v, std::memory_order_relaxed); }

  double seconds(Phase p) const { return static_cast<double>(phase_ns_[idx(p)].load()) * 1e-9; }
  int64_t count(Counter c) const { return counters_[idx(c)].load(); }

  bool tracing() const { return trace_; }
  void record(std::string name, Lane lane, Clock::time_point begin, Clock::time_point end);
  std::vector<TraceEvent> trace_events() const;

  // Totals as plain arrays (for summaries and cross-rank reduction).
  std::array<double, kPhases> phase_totals() const;
  std::array<int64_t, kCounters> counter_totals() const;
  void reset();
  // Phase times only (counters and trace events stay): the end of a warm-up.
  void reset_times();

 private:
  template <typename E>
  static int idx(E e) {
    return static_cast<int>(e);
  }
  bool trace_;
  WallClock wall_;
  RunClock* clock_ = &wall_;
  Clock::time_point origin_;
  std::array<std::atomic<int64_t>, kPhases> phase_ns_{};
  std::array<std::atomic<int64_t>, kCounters> counters_{};
  mutable std::mutex trace_mu_;
  std::vector<TraceEvent> events_;
};

// Times a scope into a phase (and into the trace when tracing is on). A null profiler is allowed.
class ScopedPhase {
 public:
  ScopedPhase(Profiler* prof, Phase phase, Lane lane = Lane::Compute, const char* label = nullptr)
      : prof_(prof),
        phase_(phase),
        lane_(lane),
        label_(label),
        begin_(prof != nullptr ? prof->now() : Profiler::Clock::now()) {}
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  Profiler* prof_;
  Phase phase_;
  Lane lane_;
  const char* label_;
  Profiler::Clock::time_point begin_;
};

}  // namespace tt
