// teetrain: the command-line entry point. Library code throws; this is the only place that turns
// errors into exit codes (base/error.h): 2 = bad input, 3 = integrity failure (tampering), 1 = anything else.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/secure/first_failure.h"
#include "comm/transport/mpi_transport.h"
#include "data/image_cache.h"
#include "engine/run/startup_watchdog.h"
#include "tools/cli/commands.h"
#include "tools/cli/error_report.h"
#include "tools/cli/parse_hints.h"
#include "tools/cli/train_flags.h"

namespace {

// Prints the one line of a failure and returns its exit code. In a job of several ranks only the
// first failure is the verdict (Note [One detection line], comm/secure/first_failure.h): a rank whose failure
// followed from another rank's detected attack says so and waits for that rank to abort the job.
int report_failure(const std::exception& e, tt::comm::FailureNotices* notices) {
  // base/error.h gives each error its category; an attack is announced as such on its one line.
  // Anything else is put into words (error_report.h): no raw library text reaches the user.
  const tt::cli::ErrorReport r = tt::cli::report_error(e);
  const int code = static_cast<int>(r.code);
  std::optional<tt::comm::FirstFailure> first;
  if (notices != nullptr) {
    first = notices->settle(e, code);
    if (!first->mine && first->integrity) {
      const auto own = code == static_cast<int>(tt::ExitCode::kIntegrity) ? tt::comm::OwnFailure::kIntegrity
                                                                          : tt::comm::OwnFailure::kFollowing;
      std::fprintf(stderr, "teetrain: %s\n", tt::comm::consequence_line(notices->who(), *first, own).c_str());
      std::fflush(stderr);
      tt::comm::await_abort(*first);
    }
  }
  std::fprintf(stderr, "teetrain: %s: %s\n",
               code == static_cast<int>(tt::ExitCode::kIntegrity) ? "INTEGRITY FAILURE" : "error",
               r.text.c_str());
  std::fflush(stderr);
  // The verdict's line is out: now the others hear it and print theirs (Note [Every rank prints a line]).
  if (first && first->mine) notices->announce();
  return code;
}

// This process's rank as the launcher numbered it, before MPI can say (-1 without a launcher).
int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return std::atoi(v);
  return -1;
}

void print_error_line(const std::string& line) {
  std::fprintf(stderr, "teetrain: error: %s\n", line.c_str());
  std::fflush(stderr);
}

// Commands that talk between ranks run inside one MPI session, opened before they start so that
// an error can still abort every rank (a lone rank that merely exited would leave its peers waiting).
void start_mpi(int* argc, char*** argv, tt::StartupWatchdog& watchdog,
               std::optional<tt::comm::MpiSession>& mpi) {
  const char* command = *argc > 1 ? (*argv)[1] : "";
  if (std::strcmp(command, "train") != 0 && std::strcmp(command, "runs") != 0 &&
      std::strcmp(command, "bench") != 0)
    return;
  watchdog.enter(tt::StartupStage::MpiInit);
  mpi.emplace(argc, argv);
  watchdog.mpi_started(mpi->world_rank(), mpi->multiple());
  watchdog.enter(tt::StartupStage::OwnWork);
}

// Ends a process of an MPI session that failed with `code`. Never returns.
[[noreturn]] void leave_failed(int code, bool several) {
  // Stop every rank now with this exit code: no rank applies an update after a failed step.
  std::fflush(stdout);
  std::fflush(stderr);
  if (several) MPI_Abort(MPI_COMM_WORLD, code);
  // A single process (an MPI singleton, started without mpirun) that failed: leave without
  // MPI_Finalize. Open MPI 4.1's singleton finalize can deadlock joining its progress thread, or
  // crash unwinding it, when it follows init closely (seen under load: a refused run then hangs
  // instead of exiting 2). Nothing of ours needs finalizing after a failure: outputs are written
  // atomically or not at all.
  std::_Exit(code);
}

// OpenMP threads must sleep rather than spin when idle: ranks, the communication thread and crypto
// workers share few cores, and spinning workers starve them. But not at once: a step's ops open a
// parallel region every few microseconds, and a worker that went to sleep at the end of one must be
// woken by a system call at the start of the next. A spin of 1000 polls (a few microseconds; libgomp's
// passive default spins 0) bridges those gaps, while a longer wait still sleeps (measured:
// docs/benchmarks.md, "OpenMP waits"). libgomp reads both variables when it is loaded, before main, so
// we set them and re-execute ourselves once (MPI is not initialised yet, so this is safe under mpirun
// too). A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
void reexec_with_openmp_waits(char** argv) {
  const bool policy = std::getenv("OMP_WAIT_POLICY") == nullptr;
  const bool spin = std::getenv("GOMP_SPINCOUNT") == nullptr;
  if (!policy && !spin) return;
  if (policy) ::setenv("OMP_WAIT_POLICY", "passive", 1);
  if (spin) ::setenv("GOMP_SPINCOUNT", "1000", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then carry on with libgomp's defaults
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_openmp_waits(argv);
  CLI::App app{
      "teetrain: data-parallel training with a built-in TEE (confidential computing) mode.\n"
      "Run `teetrain <command> --help` for the options of each command. Exit codes: 0 ok, 1 run failure,\n"
      "2 bad input (file, flag or number), 3 integrity failure (a sealed message or file failed to open).\n"
      "Teaching: docs/labs/ has six hands-on labs (trust boundaries, tampering, attestation, cost, data at\n"
      "rest, the paper); `--adversary SPEC` on train and bench allreduce puts an attacker on the links."};
  app.require_subcommand(1);
  // A later flag overrides an earlier one (scripts append overrides to a base command line).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", "teetrain 0.1.0");
  // Note [Start-up watchdog] (engine/run/startup_watchdog.h): MPI_Init waits for every process of the
  // job, so it is bounded before the options are parsed, by the --timeout the command line gives.
  tt::StartupWatchdog watchdog(tt::cli::timeout_before_parse(argc, argv), launcher_rank(), print_error_line);
  tt::cli::register_models(app);
  tt::cli::register_prepare_text(app);
  // Commands that talk between ranks run inside one MPI session (start_mpi, after the commands are
  // registered). Declared before the notices, whose listener must stop before MPI is finalized.
  std::optional<tt::comm::MpiSession> mpi;
  // Alive until exit: MPI may still read what it sent. Its listener hears a verdict while this rank
  // runs (Note [Every rank prints a line]); the session's notice key arms it (Note [Sealed notices]).
  tt::comm::FailureNotices notices;
  // The process's decoded image sets, shared by its ranks and runs (Note [Shared decoded images]).
  const tt::RunServices services{.watchdog = &watchdog,
                                 .notices = &notices,
                                 .seat = nullptr,
                                 .ranks_on_host = 0,
                                 .images = std::make_shared<tt::ImageSetCache>(),
                                 .prices = nullptr};  // each run's own: train_command
  tt::cli::register_train(app, services);
  tt::cli::register_runs(app, services);
  tt::cli::register_eval(app);
  tt::cli::register_sample(app);
  tt::cli::register_bench(app, services);
  tt::cli::register_provision(app);
  tt::cli::register_attest(app);
  tt::cli::register_verify_evidence(app);
  tt::cli::register_gather_evidence(app);
  tt::cli::register_attestation_policy(app);
  tt::cli::register_keys(app);
  tt::cli::register_ckpt(app);
  tt::cli::register_model_cmd(app);
  start_mpi(&argc, &argv, watchdog, mpi);
  const bool several = mpi && mpi->world_size() > 1;
  if (several && mpi->multiple()) notices.listen();
  int code = 0;
  try {
    if (const auto empty = tt::cli::empty_word(app, std::vector<std::string>(argv + 1, argv + argc)))
      throw tt::InputError(*empty);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A typo gets the closest correct spelling; everything else CLI11's own message.
    const std::optional<std::string> hint =
        e.get_exit_code() == 0
            ? std::nullopt
            : tt::cli::explain_parse_error(app, std::vector<std::string>(argv + 1, argv + argc));
    if (hint) std::fprintf(stderr, "teetrain: error: %s\n", hint->c_str());
    code = hint ? 2 : (app.exit(e) == 0 ? 0 : 2);
  } catch (const std::exception& e) {
    watchdog.stand_down();  // this rank names its own failure, with its own exit code
    code = report_failure(e, several ? &notices : nullptr);
  }
  if (code != 0 && mpi) leave_failed(code, several);
  return code;
}
