// What main holds for the life of a job and lends the commands that run one (train, bench allreduce):
// the start-up watchdog that bounds each start-up stage (Note [Start-up watchdog],
// engine/run/startup_watchdog.h) and the failure notices the session's key arms (Note [Sealed notices],
// comm/secure/first_failure.h). Either may be null: a run without them is unbounded at start-up, or
// its notices stay in clear.
#pragma once

namespace tt {

class StartupWatchdog;

}  // namespace tt

namespace tt::comm {

class FailureNotices;

}  // namespace tt::comm

namespace tt {

struct RunServices {
  StartupWatchdog* watchdog = nullptr;
  comm::FailureNotices* notices = nullptr;
};

}  // namespace tt
