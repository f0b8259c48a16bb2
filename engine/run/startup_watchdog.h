// StartupWatchdog: every stage of a run's start-up in which a rank waits for its peers ends within
// --timeout, including the waits inside MPI that no deadline of ours reaches.
//
// Note [Start-up watchdog]: between process start and the first training step a rank waits for its
// peers where our transports' deadlines (comm/transport.h) cannot reach: in MPI_Init (Open MPI's
// start-up exchange waits for every process of the job, so a rank that never started holds the others
// there), and in the collectives that build communicators and shared-memory channels (MPI_Comm_dup,
// MPI_Comm_split_type, MPI_Allgather, MPI_Allreduce: a peer stopped before one holds every other rank
// inside it). One thread of this object watches the stage the rank is in. A stage that waits for peers
// must end within --timeout plus kGrace; when it does not, the thread prints one line naming the
// rank, the stage and what to check, and ends the job with exit 1 — a slow, stopped or absent peer
// is a run failure, never an attack (exit 3). It ends the job through MPI_Abort once MPI is up and
// lets other threads call it (then _exit if the abort itself does not end the process), else with
// _exit (mpirun then stops the other ranks). kGrace lets our own deadlines, whose errors name the peer
// and the message, speak first where they can. A stage that is this rank's own work (parsing options,
// opening data, building the model, reading a checkpoint) is not bounded: a peer waiting for it is,
// in its own stage. A rank that was itself stopped (its watch looks again long after it last did)
// blames nobody: its peers judge the wait, and its own stage's deadline starts again. Once the run is
// assembled (StartupStage::Running) the watch is over: the steps' waits are the transports'.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace tt {

enum class StartupStage : std::uint8_t {
  MpiInit,          // MPI_Init: the launcher's exchange with every process of the job
  OwnWork,          // this rank's own work (options, data, model, checkpoint): not bounded
  Links,            // communicators, host transports, shared-memory channels, the agreed link
  Attestation,      // TEE: evidence, its verification and key agreement on every link
  ConfigAgreement,  // every rank runs this configuration with the same trust (agreement, round one)
  KeyRelease,       // rank 0 releases the dataset and checkpoint keys over the sealed links
  InputAgreement,   // rank 0's parameters, and every rank opened the same inputs (round two)
  Running,          // the run is assembled: the watch is over
};

// A stage's name in the watchdog's line, and whether it waits for peers (and so is bounded).
std::string_view stage_name(StartupStage stage);
bool stage_bounded(StartupStage stage);

class StartupWatchdog {
 public:
  // Added to --timeout before a stage is declared stuck (Note [Start-up watchdog]).
  static constexpr std::chrono::milliseconds kGrace{2000};
  // How long MPI_Abort may take to end this process before the watchdog leaves with _exit.
  static constexpr std::chrono::milliseconds kAbortPatience{5000};
  // How often the thread looks while a deadline runs (a much later look: this process was stopped).
  static constexpr std::chrono::milliseconds kTick{250};
  using LineFn = std::function<void(const std::string&)>;

  // Starts the watching thread, in OwnWork (nothing bounded yet). `rank`: this process's rank as its
  // launcher gave it (-1 unknown) until mpi_started() says MPI's. `say` prints the one line.
  StartupWatchdog(std::chrono::milliseconds timeout, int rank, LineFn say);
  ~StartupWatchdog();  // stops and joins the thread
  StartupWatchdog(const StartupWatchdog&) = delete;
  StartupWatchdog& operator=(const StartupWatchdog&) = delete;

  // This rank is now in `stage`: a bounded one must end within timeout + kGrace from now.
  void enter(StartupStage stage);
  // The run's --timeout as parsed (main armed MpiInit with the value found before parsing).
  void set_timeout(std::chrono::milliseconds timeout);
  // MPI is initialised: this rank's number in MPI_COMM_WORLD, and whether another thread may call
  // MPI_Abort (MPI_THREAD_MULTIPLE); else the job is ended with _exit.
  void mpi_started(int rank, bool abort_from_any_thread);
  // The rank reports a failure itself (its own line and exit code): the watch stands down for good.
  void stand_down() { enter(StartupStage::Running); }

  // The line printed when `stage` overran: rank, stage, bound and what to check.
  static std::string stuck_line(int rank, StartupStage stage, std::chrono::milliseconds timeout);

 private:
  void watch();
  [[noreturn]] void end_job(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::chrono::milliseconds timeout_;
  int rank_;
  LineFn say_;
  StartupStage stage_ = StartupStage::OwnWork;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // set in a bounded stage only
  bool mpi_abort_ = false;
  bool over_ = false;   // the destructor asks the thread to end
  std::thread thread_;  // last: started once every field above is set
};

// Enters `stage` when a watchdog is given (library users such as tests may run without one).
inline void enter_stage(StartupWatchdog* watchdog, StartupStage stage) {
  if (watchdog != nullptr) watchdog->enter(stage);
}

}  // namespace tt
