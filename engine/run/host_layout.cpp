#include "engine/run/host_layout.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace tt {

int host_cores() {
  return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return host_cores();
  return std::max(1, CPU_COUNT(&set));
}

int host_share_threads(int ranks_on_host) {
  return std::max(1, std::min(host_cores() / std::max(1, ranks_on_host), usable_cpus()));
}

std::string thread_binding_warning(int threads) {
  const int cpus = usable_cpus();
  if (threads <= cpus) return {};
  return "--threads " + std::to_string(threads) + " but this rank may run on " + std::to_string(cpus) +
         (cpus == 1 ? " CPU" : " CPUs") +
         " (mpirun binds each rank to one core by default): the threads take turns and the step "
         "runs slower; add `--bind-to none` or `--map-by slot:PE=" +
         std::to_string(threads) + "` to mpirun, or lower --threads";
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
