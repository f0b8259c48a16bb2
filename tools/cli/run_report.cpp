#include "tools/cli/run_report.h"

#include <cstdio>

namespace tt::cli {

nlohmann::json gather_phase_report(DistContext& dist, const Profiler& profiler, long steps) {
  const auto totals = profiler.phase_totals();
  std::vector<double> per_step(totals.begin(), totals.end());
  for (double& v : per_step) v /= static_cast<double>(std::max(1L, steps));
  // The trainer times the whole batch fetch as data; sealed loaders also time their ingress part
  // (opening, bounce path), so data is reported net of it and the phases still add up.
  auto& data = per_step[static_cast<std::size_t>(Phase::Data)];
  data = std::max(0.0, data - per_step[static_cast<std::size_t>(Phase::Ingress)]);
  const auto [mx, mean] = dist.max_and_mean(per_step);
  nlohmann::json phases = nlohmann::json::object();
  for (int i = 0; i < Profiler::kPhases; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    phases[std::string(phase_name(static_cast<Phase>(i)))] = {{"max", mx[idx]}, {"mean", mean[idx]}};
  }
  const auto counts = profiler.counter_totals();
  nlohmann::json counters = nlohmann::json::object();
  for (int i = 0; i < Profiler::kCounters; ++i) {
    counters[std::string(counter_name(static_cast<Counter>(i)))] =
        dist.gather(counts[static_cast<std::size_t>(i)]);
  }
  return {{"phases", phases}, {"counters", counters}};
}

double main_thread_seconds(const nlohmann::json& report) {
  double s = 0;
  for (const Phase p : {Phase::Data, Phase::Ingress, Phase::Forward, Phase::Backward, Phase::CommExposed,
                        Phase::Optimizer, Phase::Checkpoint, Phase::Validation, Phase::Bookkeeping}) {
    s += report["phases"][std::string(phase_name(p))]["mean"].get<double>();
  }
  return s;
}

void print_phase_table(const nlohmann::json& report, double step_seconds) {
  std::fprintf(stderr, "\nphase (per step)       max over ranks   mean over ranks   share of step\n");
  for (const auto& [name, v] : report["phases"].items()) {
    const double mx = v["max"].get<double>();
    const double mean = v["mean"].get<double>();
    if (mx == 0.0) continue;
    std::fprintf(stderr, "  %-18s %12.2f ms %14.2f ms %12.1f%%\n", name.c_str(), mx * 1e3, mean * 1e3,
                 step_seconds > 0 ? 100.0 * mean / step_seconds : 0.0);
  }
  std::fprintf(stderr,
               "  %-18s %12.2f ms   (seal/open/reduce/stage run on other threads and may overlap compute)\n",
               "step (measured)", step_seconds * 1e3);
  const double accounted = main_thread_seconds(report);
  std::fprintf(
      stderr,
      "  %-18s %12.2f ms   = %.1f%% of the step (data + ingress + forward + backward + comm_exposed + "
      "optimizer + checkpoint + validation + bookkeeping)\n",
      "accounted", accounted * 1e3, step_seconds > 0 ? 100.0 * accounted / step_seconds : 0.0);
  std::fprintf(stderr, "counters (per rank, whole run):\n");
  for (const auto& [name, v] : report["counters"].items()) {
    bool any = false;
    for (const auto& x : v) any = any || x.get<int64_t>() != 0;
    if (any) std::fprintf(stderr, "  %-18s %s\n", name.c_str(), v.dump().c_str());
  }
}

}  // namespace tt::cli
