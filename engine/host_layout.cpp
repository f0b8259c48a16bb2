#include "engine/host_layout.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace tt {

int host_cores() {
  return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

int ranks_on_this_host() {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_ranks = 1;
  MPI_Comm_size(local, &local_ranks);
  MPI_Comm_free(&local);
  return local_ranks;
}

namespace {

// Open MPI passes `--mca mpi_yield_when_idle 1` to its ranks as this environment variable.
bool open_mpi_told_to_yield() {
  const char* v = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  if (v == nullptr) return false;
  const std::string s(v);
  return s == "1" || s == "true" || s == "yes";
}

}  // namespace

comm::WaitMode fair_wait_mode() {
  const bool oversubscribed = ranks_on_this_host() > host_cores();  // collective: every rank calls it
  return oversubscribed || open_mpi_told_to_yield() ? comm::WaitMode::Adaptive : comm::WaitMode::Busy;
}

}  // namespace tt
