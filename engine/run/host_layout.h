// How the ranks of a run sit on this host: its cores, and how many ranks share them. Decides default
// thread counts and how a waiting communication thread may poll.
#pragma once
#include <string>

#include "comm/transport.h"

namespace tt {

// Hardware threads of this host (at least 1).
int host_cores();
// CPUs this process may run on: its affinity mask, which mpirun narrows when it binds a rank (one
// core per rank by default at up to two ranks), at least 1.
int usable_cpus();
// This rank's share of its host when the user gave no --threads: the host's cores shared among its
// `ranks_on_host` ranks, and never more than the CPUs this rank may run on (at least 1). Hosts differ,
// so a run takes the smallest share over its ranks (TrainingRun).
int host_share_threads(int ranks_on_host);
// Empty, or a warning that `threads` compute threads share fewer CPUs (a bound rank): each op's
// threads then take turns on a core, and the step runs slower than with fewer threads.
std::string thread_binding_warning(int threads);
// Ranks of MPI_COMM_WORLD on this host (MPI_COMM_TYPE_SHARED), 1 without MPI peers. Collective.
int ranks_on_this_host();
// Busy polling, as MPI_Allreduce does, while each rank has a core of its own; adaptive (yield, then
// nap) once ranks outnumber cores — a spinning rank would then hold the core its peer needs, which is
// why Open MPI itself yields when oversubscribed. Also adaptive when Open MPI was told to yield
// (`--mca mpi_yield_when_idle 1`, as scripts/netns-hosts.sh does for emulated hosts that share cores
// with the kernel's TCP work). Collective (it counts the ranks on the host).
comm::WaitMode fair_wait_mode();

}  // namespace tt
