#include "engine/host_layout.h"

#include <mpi.h>

#include <algorithm>
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

comm::WaitMode fair_wait_mode() {
  return ranks_on_this_host() <= host_cores() ? comm::WaitMode::Busy : comm::WaitMode::Adaptive;
}

}  // namespace tt
