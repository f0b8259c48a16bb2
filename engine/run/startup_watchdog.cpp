#include "engine/run/startup_watchdog.h"

#include <mpi.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace tt {
namespace {

// Note [Continued, not stuck]: a rank stopped (SIGSTOP) while its peers wait is the one a peer's
// watchdog names; when that peer aborts the job, mpirun continues the stopped rank (SIGCONT) to end
// it. The gap between two looks shows a long stop, but not a short one that came late in the stage
// (a rank that entered it seconds after its peers): continued, such a rank could reach its own
// deadline before mpirun's kill lands, and blame a peer for its own stop. So SIGCONT itself is
// heard: while the watch runs, its handler marks the process continued, and the next look starts the
// stage's deadline again, as a long gap does. A handler reaches only static storage: this flag, set
// there and read by the watching thread, is the one such variable (lock-free, so signal-safe).
std::atomic<bool> continued_since_look{false};

// Installs the SIGCONT handler for the life of the watch and puts back what was there. SA_RESTART:
// calls that the continue interrupts restart, as without a handler.
class ContinueSignal {
 public:
  ContinueSignal() {
    struct sigaction heard {};
    heard.sa_handler = +[](int) { continued_since_look.store(true, std::memory_order_relaxed); };
    heard.sa_flags = SA_RESTART;
    sigemptyset(&heard.sa_mask);
    sigaction(SIGCONT, &heard, &old_);
  }
  ~ContinueSignal() { sigaction(SIGCONT, &old_, nullptr); }
  ContinueSignal(const ContinueSignal&) = delete;
  ContinueSignal& operator=(const ContinueSignal&) = delete;

 private:
  struct sigaction old_ {};
};

// What a rank waiting for its peers should check: one of them is not where it should be.
constexpr std::string_view kPeerStuck =
    "a peer was stopped (SIGSTOP) or is stuck, or its own start-up work (opening its data or "
    "checkpoint) takes longer than --timeout; check that every rank's process is running, or raise "
    "--timeout";

struct StageRow {
  StartupStage stage;
  std::string_view name;
  bool bounded;            // the rank waits for its peers in this stage
  std::string_view check;  // what the line tells the user to look at
};

constexpr std::array<StageRow, 8> kStages{{
    {StartupStage::MpiInit, "MPI start-up (MPI_Init)", true,
     "a rank of the job never started, or was stopped (SIGSTOP) or is stuck while starting; check that "
     "mpirun started every rank on every host and that each one is running"},
    {StartupStage::OwnWork, "its own start-up work", false, ""},
    {StartupStage::Links, "setting up the links between ranks (communicators, shared-memory channels)", true,
     kPeerStuck},
    {StartupStage::Attestation, "attestation and key agreement", true, kPeerStuck},
    {StartupStage::ConfigAgreement, "the ranks' agreement on the configuration", true, kPeerStuck},
    {StartupStage::KeyRelease, "the release of the keys at rest", true, kPeerStuck},
    {StartupStage::InputAgreement, "the initial parameters and the agreement on the inputs", true,
     kPeerStuck},
    {StartupStage::Running, "training", false, ""},
}};

// The table is indexed by the enum.
static_assert([] {
  for (std::size_t i = 0; i < kStages.size(); ++i)
    if (kStages[i].stage != static_cast<StartupStage>(i)) return false;
  return kStages.back().stage == StartupStage::Running;
}());

const StageRow& row(StartupStage stage) {
  return kStages[static_cast<std::size_t>(stage)];
}

std::string seconds(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

}  // namespace

std::string_view stage_name(StartupStage stage) {
  return row(stage).name;
}

bool stage_bounded(StartupStage stage) {
  return row(stage).bounded;
}

std::string StartupWatchdog::stuck_line(int rank, StartupStage stage, std::chrono::milliseconds timeout) {
  const std::string who = rank >= 0 ? "rank " + std::to_string(rank) : std::string("this rank");
  return who + ": start-up stuck in " + std::string(stage_name(stage)) + " for longer than --timeout " +
         seconds(timeout) + " + " + seconds(kGrace) + ": " + std::string(row(stage).check);
}

StartupWatchdog::StartupWatchdog(std::chrono::milliseconds timeout, int rank, LineFn say)
    : timeout_(timeout), rank_(rank), say_(std::move(say)), thread_([this] { watch(); }) {}

StartupWatchdog::~StartupWatchdog() {
  {
    const std::lock_guard lock(mutex_);
    over_ = true;
  }
  changed_.notify_one();
  thread_.join();
}

void StartupWatchdog::enter(StartupStage stage) {
  {
    const std::lock_guard lock(mutex_);
    if (stage_ == StartupStage::Running) return;  // standing down is for good
    stage_ = stage;
    deadline_.reset();
    if (stage_bounded(stage)) deadline_ = std::chrono::steady_clock::now() + timeout_ + kGrace;
  }
  changed_.notify_one();
}

void StartupWatchdog::set_timeout(std::chrono::milliseconds timeout) {
  const std::lock_guard lock(mutex_);
  timeout_ = timeout;
}

void StartupWatchdog::mpi_started(int rank, bool abort_from_any_thread) {
  const std::lock_guard lock(mutex_);
  rank_ = rank;
  mpi_abort_ = abort_from_any_thread;
}

// The thread looks every kTick while a deadline runs. A look that comes far later than asked means
// this process itself was stopped (SIGSTOP, then continued: by mpirun about to end it, or by whoever
// stopped it) or starved: the wait is its peers' to judge, and its own stage's deadline starts again.
void StartupWatchdog::watch() {
  using Clock = std::chrono::steady_clock;
  const ContinueSignal continues;  // Note [Continued, not stuck]
  std::unique_lock lock(mutex_);
  auto last = Clock::now();
  while (!over_ && stage_ != StartupStage::Running) {
    if (!deadline_) {
      changed_.wait(lock);
      last = Clock::now();
      continue;
    }
    changed_.wait_until(lock, std::min(*deadline_, last + kTick));
    const auto now = Clock::now();
    const bool continued = continued_since_look.exchange(false, std::memory_order_relaxed);
    const bool stopped = continued || now - last > kTick + kGrace;
    last = now;
    if (!deadline_ || stage_ == StartupStage::Running) continue;  // a stage left meanwhile
    if (stopped) {
      deadline_ = now + timeout_ + kGrace;
    } else if (now >= *deadline_) {
      end_job(lock);
    }
  }
}

void StartupWatchdog::end_job(std::unique_lock<std::mutex>& lock) {
  const std::string line = stuck_line(rank_, stage_, timeout_);
  const bool mpi_abort = mpi_abort_;
  lock.unlock();
  say_(line);
  std::fflush(stderr);
  constexpr int code = static_cast<int>(ExitCode::kRunFailure);
  if (mpi_abort) {
    // MPI_Abort stops every rank of the job with this code. The main thread is inside MPI, maybe
    // holding what the abort needs: should it never return nor end the process, _exit below does.
    std::thread([] { MPI_Abort(MPI_COMM_WORLD, code); }).detach();
    std::this_thread::sleep_for(kAbortPatience);
  }
  std::_Exit(code);
}

}  // namespace tt
