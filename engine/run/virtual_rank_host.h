// Runs this process's share of a run's ranks as threads (--ranks-per-process K, Note [Virtual ranks] in
// comm/transport/virtual_ranks.h): each virtual rank builds and runs its own TrainingRun over its own
// transport, exactly as a process-per-rank run's rank does.
#pragma once
#include <functional>

#include "engine/run/run_services.h"

namespace tt {

// Collective over MPI_COMM_WORLD (every process calls it with the same `per_process`). Runs
// rank_fn(services of one virtual rank) on one thread per local rank and returns once every one has
// returned. The first failure is rethrown at once: the other ranks may be waiting for the failed one,
// so their threads are left running, to end with the process (main ends a failed job with the
// failure's exit code). The start-up watchdog and the failure notices are lent to the first local
// rank only: they are the process's.
void run_virtual_ranks(int per_process, const RunServices& services,
                       const std::function<void(const RunServices&)>& rank_fn);

}  // namespace tt
