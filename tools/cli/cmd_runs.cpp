// `teetrain runs PLAN`: many trainings in one process, one after another. Each line of PLAN is the
// argument list of one `teetrain train` (what follows `train`); blank lines and lines starting with #
// are skipped. Every line is parsed before any runs, so a mistyped line stops the plan before its first
// run. Each run then prints and writes its --summary exactly as a separate `teetrain train` would: the
// same code (train_command.h) builds and runs it. What a line no longer pays is the process: start-up,
// MPI_Init and exit, about 1 s of a small emulated run's 1.1 s here (docs/reproducing.md, "Many runs
// in one process").
//
// The first failing line stops the plan: its line number is printed, then its error as `train` prints
// it, with its exit code. The lines after it are not run, because a failed run of virtual ranks leaves
// the failed rank's peers blocked in their threads (engine/run/virtual_rank_host.h), where nothing can
// end them but the process's exit.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "tee/regular_file.h"
#include "tools/cli/commands.h"
#include "tools/cli/train_command.h"
#include "tools/cli/train_flags.h"

namespace tt::cli {
namespace {

// A plan longer than this is not a list of runs someone wrote or generated.
constexpr std::uint64_t kMaxPlanBytes = std::uint64_t{16} << 20;

struct PlannedRun {
  int line = 0;  // 1-based, in PLAN
  std::shared_ptr<TrainOptions> opts;
  bool key_file_given = false;
};

// The run of one line, parsed by the flags of `train` (quotes as a shell's: "a b", 'a b').
PlannedRun parse_line(const std::string& plan, int line, const std::string& text) {
  PlannedRun run{.line = line, .opts = std::make_shared<TrainOptions>(), .key_file_given = false};
  CLI::App app{"teetrain train", "train"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // as main's
  add_train_options(&app, *run.opts);
  try {
    app.parse(text, false);
  } catch (const CLI::ParseError& e) {
    throw InputError(plan + " line " + std::to_string(line) + ": " + e.what() +
                     " (each line holds the arguments of one `teetrain train`)");
  }
  run.key_file_given = app.count("--key-file") > 0;
  return run;
}

std::vector<PlannedRun> read_plan(const std::string& plan) {
  const std::vector<std::uint8_t> bytes = tee::read_regular_file(plan, "runs PLAN", kMaxPlanBytes);
  std::vector<PlannedRun> runs;
  std::size_t start = 0;
  for (int line = 1; start < bytes.size(); ++line) {
    std::size_t end = start;
    while (end < bytes.size() && bytes[end] != '\n') ++end;
    const std::string text(bytes.begin() + static_cast<std::ptrdiff_t>(start),
                           bytes.begin() + static_cast<std::ptrdiff_t>(end));
    start = end + 1;
    const std::size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos || text[first] == '#') continue;
    runs.push_back(parse_line(plan, line, text));
  }
  if (runs.empty())
    throw InputError(plan + ": no runs in the plan (one `teetrain train` argument list a line)");
  return runs;
}

void run_plan(const std::string& plan, const RunServices& services) {
  const std::vector<PlannedRun> runs = read_plan(plan);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const PlannedRun& r = runs[i];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      train_command(r.opts, r.key_file_given, services);
    } catch (...) {
      std::fprintf(stderr,
                   "teetrain runs: %s line %d failed (run %zu of %zu; the runs after it were not made)\n",
                   plan.c_str(), r.line, i + 1, runs.size());
      std::fflush(stderr);
      throw;
    }
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
    std::fprintf(stderr, "teetrain runs: %s line %d done (run %zu of %zu, %.2f s wall)\n", plan.c_str(),
                 r.line, i + 1, runs.size(), wall.count());
    std::fflush(stderr);
  }
}

}  // namespace

void register_runs(CLI::App& app, RunServices services) {
  auto plan = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "runs",
      "Make many trainings in one process, one after another: each line of PLAN holds the arguments of one "
      "`teetrain train` (# comments). Each writes its output and --summary as `train` would; the first "
      "failing line stops the plan");
  cmd->add_option("PLAN", *plan, "The plan: one `teetrain train` argument list a line")->required();
  cmd->callback([plan, services] { run_plan(*plan, services); });
}

}  // namespace tt::cli
