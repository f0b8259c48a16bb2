// What main holds for the life of a job and lends the commands that run one (train, bench allreduce):
// the start-up watchdog that bounds each start-up stage (Note [Start-up watchdog],
// engine/run/startup_watchdog.h) and the failure notices the session's key arms (Note [Sealed notices],
// comm/secure/first_failure.h). Either may be null: a run without them is unbounded at start-up, or
// its notices stay in clear. A virtual rank (Note [Virtual ranks], comm/transport/virtual_ranks.h) is
// also lent its transport and the count of ranks on its host, which it cannot ask MPI for. The
// process's decoded image sets are shared by all its ranks and runs (Note [Shared decoded images],
// data/image_cache.h), and one run's virtual ranks price its buckets' all-reduce choices once between them
// (AlgoPrices, engine/gradients/allreduce_selection.h); both held by shared_ptr, as a failed run's ranks
// may outlive the command.
#pragma once
#include <memory>

namespace tt {

class AlgoPrices;
class ImageSetCache;
class StartupWatchdog;

}  // namespace tt

namespace tt::comm {

class FailureNotices;
class Transport;

}  // namespace tt::comm

namespace tt {

struct RunServices {
  StartupWatchdog* watchdog = nullptr;
  comm::FailureNotices* notices = nullptr;
  comm::Transport* seat = nullptr;        // null: this process is one rank of MPI_COMM_WORLD
  int ranks_on_host = 0;                  // with seat: the ranks on this host, all processes' virtual ranks
  std::shared_ptr<ImageSetCache> images;  // null: each rank decodes its own
  std::shared_ptr<AlgoPrices> prices;     // one run's virtual ranks' all-reduce pricing (null: each its own)
};

}  // namespace tt
