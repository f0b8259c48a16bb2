#include "engine/run/virtual_rank_host.h"

#include <mpi.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/secure/first_failure.h"
#include "comm/transport/virtual_ranks.h"
#include "engine/run/host_layout.h"

namespace tt {
namespace {

// What the ranks' threads share; it outlives the call when a failure leaves threads running.
struct RankThreads {
  RankThreads(int per_process, bool multiple) : ranks(MPI_COMM_WORLD, per_process, multiple) {}
  comm::VirtualRanks ranks;
  std::mutex mu;
  std::condition_variable changed;
  int running = 0;
  std::exception_ptr first_failure;
  int failed_rank = -1;  // the rank (of the world) whose failure is first_failure
};

bool mpi_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

}  // namespace

void run_virtual_ranks(int per_process, const RunServices& services,
                       const std::function<void(const RunServices&)>& rank_fn) {
  const int on_host = ranks_on_this_host() * per_process;  // collective, before any thread starts
  auto shared = std::make_shared<RankThreads>(per_process, mpi_thread_multiple());
  shared->running = per_process;
  // Note [Notices name virtual ranks] (comm/secure/first_failure.h): this process's lines name its ranks.
  if (services.notices != nullptr) services.notices->host_ranks(per_process);
  std::vector<std::thread> threads;
  for (int k = 0; k < per_process; ++k) {
    const RunServices seat{.watchdog = k == 0 ? services.watchdog : nullptr,
                           .notices = k == 0 ? services.notices : nullptr,
                           .seat = &shared->ranks.transport(k),
                           .ranks_on_host = on_host,
                           .images = services.images,
                           .prices = services.prices};
    const int rank = shared->ranks.first() + k;
    threads.emplace_back([shared, seat, rank_fn, rank] {
      std::exception_ptr failure;
      try {
        rank_fn(seat);
      } catch (...) {
        failure = std::current_exception();
      }
      const std::lock_guard lock(shared->mu);
      if (failure && !shared->first_failure) {
        shared->first_failure = failure;
        shared->failed_rank = rank;
      }
      --shared->running;
      shared->changed.notify_all();
    });
  }
  std::unique_lock lock(shared->mu);
  shared->changed.wait(lock, [&] { return shared->running == 0 || shared->first_failure; });
  if (shared->first_failure) {
    for (std::thread& t : threads) t.detach();
    if (services.notices != nullptr) services.notices->failed_rank(shared->failed_rank);
    std::rethrow_exception(shared->first_failure);
  }
  lock.unlock();
  for (std::thread& t : threads) t.join();
  if (services.notices != nullptr) services.notices->host_ranks(1);  // the process's next run may have one
}

}  // namespace tt
