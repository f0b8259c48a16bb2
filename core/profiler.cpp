#include "core/profiler.h"

namespace tt {

std::string_view phase_name(Phase p) {
  static constexpr std::array<std::string_view, Profiler::kPhases> kNames = {
      "data",  "ingress",   "forward",    "backward",   "comm_exposed", "seal", "open", "reduce",
      "stage", "optimizer", "checkpoint", "validation", "bookkeeping",  "link", "wait"};
  return kNames[static_cast<std::size_t>(p)];
}

std::string_view counter_name(Counter c) {
  static constexpr std::array<std::string_view, Profiler::kCounters> kNames = {
      "buckets",        "messages_sent",   "bytes_sent",   "messages_received",
      "bytes_received", "messages_sealed", "bytes_sealed", "messages_opened",
      "bytes_opened",   "rekeys",          "ring_sealed",  "ring_opened"};
  return kNames[static_cast<std::size_t>(c)];
}

void Profiler::record(std::string name, Lane lane, Clock::time_point begin, Clock::time_point end) {
  if (!trace_) return;
  // Virtual time: real host work the model gives no time (the real sealing of a token, a crypto
  // worker's share of it) would be zero-length marks at the start of the trace.
  if (end == begin && clock_->is_virtual()) return;
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  TraceEvent ev{std::move(name), static_cast<int>(lane), duration_cast<microseconds>(begin - origin_).count(),
                duration_cast<microseconds>(end - begin).count()};
  std::lock_guard lock(trace_mu_);
  events_.push_back(std::move(ev));
}

std::vector<TraceEvent> Profiler::trace_events() const {
  std::lock_guard lock(trace_mu_);
  return events_;
}

std::array<double, Profiler::kPhases> Profiler::phase_totals() const {
  std::array<double, kPhases> out{};
  for (int i = 0; i < kPhases; ++i)
    out[static_cast<std::size_t>(i)] =
        static_cast<double>(phase_ns_[static_cast<std::size_t>(i)].load()) * 1e-9;
  return out;
}

std::array<int64_t, Profiler::kCounters> Profiler::counter_totals() const {
  std::array<int64_t, kCounters> out{};
  for (int i = 0; i < kCounters; ++i)
    out[static_cast<std::size_t>(i)] = counters_[static_cast<std::size_t>(i)].load();
  return out;
}

void Profiler::reset() {
  for (auto& p : phase_ns_) p.store(0);
  for (auto& c : counters_) c.store(0);
  std::lock_guard lock(trace_mu_);
  events_.clear();
}

void Profiler::reset_times() {
  for (auto& p : phase_ns_) p.store(0);
}

ScopedPhase::~ScopedPhase() {
  if (prof_ == nullptr) return;
  const auto end = prof_->now();
  prof_->add_time(phase_, std::chrono::duration<double>(end - begin_).count());
  if (prof_->tracing())
    prof_->record(label_ != nullptr ? label_ : std::string(phase_name(phase_)), lane_, begin_, end);
}

}  // namespace tt
