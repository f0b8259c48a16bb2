#include "comm/first_failure.h"

#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/seal_streams.h"

namespace tt::comm {

namespace {

// Far above any tag of ours (and on MPI_COMM_WORLD, which our transports never use: they duplicate it).
constexpr int kFailureNoticeTag = 32000;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// A notice: the order key (Note [One detection line]), then the exit code. Smaller key = earlier.
enum Field { kNotIntegrity, kStep, kBucket, kPhase, kHop, kDistance, kRank, kCode, kFields };
using Notice = std::array<std::uint64_t, kFields>;

Notice notice_of(const std::exception& e, int code, int rank, int world) {
  Notice n;
  n.fill(kNone);
  n[kNotIntegrity] = code == static_cast<int>(ExitCode::kIntegrity) ? 0 : 1;
  if (const auto* c = dynamic_cast<const ChannelIntegrityError*>(&e)) {
    const MessageContext& x = c->context();
    n[kStep] = x.step;
    n[kBucket] = x.bucket;
    n[kPhase] = static_cast<std::uint64_t>(x.phase);
    n[kHop] = x.hop;
    n[kDistance] = static_cast<std::uint64_t>(((rank - x.origin) % world + world) % world);
  }
  n[kRank] = static_cast<std::uint64_t>(rank);
  n[kCode] = static_cast<std::uint64_t>(code);
  return n;
}

bool earlier(const Notice& a, const Notice& b) {
  for (int f = 0; f < kCode; ++f) {
    if (a[f] != b[f]) return a[f] < b[f];
  }
  return false;
}

}  // namespace

FirstFailure settle_first_failure(const std::exception& error, int code, std::chrono::milliseconds grace) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // A peer may be gone already: a failed send must not abort this rank before it has spoken.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const Notice mine = notice_of(error, code, rank, world);
  Notice first = mine;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    // MPI_Isend keeps reading `mine` until the send completes: it lives until this function returns,
    // and the process ends (MPI_Abort) before anything else reuses the stack.
    if (MPI_Isend(mine.data(), kFields, MPI_UINT64_T, peer, kFailureNoticeTag, MPI_COMM_WORLD, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
  const auto until = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < until) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kFailureNoticeTag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) break;
    if (flag == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    Notice theirs{};
    MPI_Recv(theirs.data(), kFields, MPI_UINT64_T, st.MPI_SOURCE, kFailureNoticeTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (earlier(theirs, first)) first = theirs;
  }
  FirstFailure out;
  out.mine = first[kRank] == mine[kRank];
  out.rank = static_cast<int>(first[kRank]);
  out.code = static_cast<int>(first[kCode]);
  out.integrity = first[kNotIntegrity] == 0;
  return out;
}

std::string consequence_line(int my_rank, const FirstFailure& first) {
  return "rank " + std::to_string(my_rank) + ": stopped: rank " + std::to_string(first.rank) +
         (first.integrity ? " detected an attack first (its INTEGRITY FAILURE line is the verdict); this "
                            "rank's own failure followed from it"
                          : " failed first; this rank's own failure followed from it");
}

void await_abort(const FirstFailure& first, std::chrono::milliseconds patience) {
  std::this_thread::sleep_for(patience);
  MPI_Abort(MPI_COMM_WORLD, first.code);
  std::_Exit(first.code);
}

}  // namespace tt::comm
