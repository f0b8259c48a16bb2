#include "tools/cli/run_report.h"

#include <cstdio>

namespace tt::cli {

void print_phase_table(const nlohmann::json& report, double step_seconds, bool virtual_time) {
  std::fprintf(stdout, "\nphase (per step)       max over ranks   mean over ranks   share of step%s\n",
               virtual_time ? "   (virtual time: computed for the modelled platform)" : "");
  for (const auto& [name, v] : report["phases"].items()) {
    const double mx = v["max"].get<double>();
    const double mean = v["mean"].get<double>();
    if (mx == 0.0) continue;
    std::fprintf(stdout, "  %-18s %12.2f ms %14.2f ms %12.1f%%\n", name.c_str(), mx * 1e3, mean * 1e3,
                 step_seconds > 0 ? 100.0 * mean / step_seconds : 0.0);
  }
  std::fprintf(stdout,
               "  %-18s %12.2f ms   (seal/open/reduce/stage/link/wait run on other threads and may overlap compute)\n",
               "step (measured)", step_seconds * 1e3);
  const double accounted = main_thread_seconds(report);
  std::fprintf(
      stdout,
      "  %-18s %12.2f ms   = %.1f%% of the step (data + ingress + forward + backward + comm_exposed + "
      "optimizer + checkpoint + validation + bookkeeping)\n",
      "accounted", accounted * 1e3, step_seconds > 0 ? 100.0 * accounted / step_seconds : 0.0);
  std::fprintf(stdout, "counters (per rank, whole run):\n");
  for (const auto& [name, v] : report["counters"].items()) {
    bool any = false;
    for (const auto& x : v) any = any || x.get<int64_t>() != 0;
    if (any) std::fprintf(stdout, "  %-18s %s\n", name.c_str(), v.dump().c_str());
  }
}

}  // namespace tt::cli
