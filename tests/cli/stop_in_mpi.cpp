// A TEST STAND-IN that stops one rank inside MPI during start-up, for tests/cli/startup_timeout.sh.
// Preloaded into the ranks (mpirun -x LD_PRELOAD=...), it wraps two of the collectives that set up the
// links between ranks through MPI's profiling interface (PMPI_*). The rank that TT_STOP_RANK names stops
// itself (SIGSTOP) on its first call of the function that TT_STOP_AT names, as a rank that a debugger,
// a scheduler or an operator stopped there would be: its peers then wait inside that collective, where
// no deadline of the transports reaches (Note [Start-up watchdog], engine/run/startup_watchdog.h).
#include <mpi.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>

namespace {

bool stop_here(const char* function) {
  const char* at = std::getenv("TT_STOP_AT");
  const char* rank = std::getenv("TT_STOP_RANK");
  if (at == nullptr || rank == nullptr || std::strcmp(at, function) != 0) return false;
  int me = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  return me == std::atoi(rank);
}

// Only the first call stops: a later one is past start-up.
void maybe_stop(const char* function, bool& called) {
  if (!called && stop_here(function)) raise(SIGSTOP);
  called = true;
}

}  // namespace

extern "C" int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  static bool called = false;
  maybe_stop("MPI_Allreduce", called);
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}

extern "C" int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* out) {
  static bool called = false;
  maybe_stop("MPI_Comm_split_type", called);
  return PMPI_Comm_split_type(comm, split_type, key, info, out);
}
