#include "comm/secure/first_failure.h"

#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "comm/secure/seal_streams.h"

namespace tt::comm {

namespace {

// Far above any tag of ours (and on MPI_COMM_WORLD, which our transports never use: they duplicate it).
constexpr int kFailureNoticeTag = 32000;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// A notice: the order key (Note [One detection line]), the exit code, and whether it is a failure
// (a candidate) or the verdict (its sender prints it now). Smaller key = earlier.
enum Field { kNotIntegrity, kStep, kBucket, kPhase, kHop, kDistance, kRank, kCode, kVerdict, kFields };
using Notice = FailureNotices::Notice;
static_assert(std::tuple_size_v<Notice> == kFields);

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
  n[kVerdict] = 0;
  return n;
}

bool earlier(const Notice& a, const Notice& b) {
  for (int f = 0; f < kCode; ++f) {
    if (a[f] != b[f]) return a[f] < b[f];
  }
  return false;
}

// `n` must outlive the sends: callers pass notices that live until the process ends (MPI_Abort).
void tell_everyone(const Notice& n, int rank, int world) {
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(n.data(), kFields, MPI_UINT64_T, peer, kFailureNoticeTag, MPI_COMM_WORLD, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

// A notice from another rank, if one has arrived.
std::optional<Notice> next_notice() {
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kFailureNoticeTag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || flag == 0)
    return std::nullopt;
  Notice n{};
  MPI_Recv(n.data(), kFields, MPI_UINT64_T, st.MPI_SOURCE, kFailureNoticeTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return n;
}

FirstFailure failure_of(const Notice& n, bool mine) {
  FirstFailure out;
  out.mine = mine;
  out.rank = static_cast<int>(n[kRank]);
  out.code = static_cast<int>(n[kCode]);
  out.integrity = n[kNotIntegrity] == 0;
  return out;
}

}  // namespace

// Every failing rank announces its failure and listens. A verdict from another rank settles it at
// once; otherwise, at the end of its grace period, the rank whose failure is the earliest it has seen
// announces the verdict and prints it. Two ranks can both announce one only if neither heard of the
// other's failure before its own deadline — but the later of the two started listening after the
// earlier one's announcement and hears it first. A failure on a forwarded message (received from a
// rank other than its origin) waits longer: a rank nearer the origin got the same bytes first and may
// still be opening them, and its line names the link the message was altered on.
FirstFailure FailureNotices::settle(const std::exception& error, int code, std::chrono::milliseconds grace) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // A peer may be gone already: a failed send must not abort this rank before it has spoken.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Notice& mine = mine_;  // read by the pending sends until the process ends
  mine = notice_of(error, code, rank, world);
  tell_everyone(mine, rank, world);
  Notice first = mine;
  const bool forwarded = mine[kDistance] != kNone && mine[kDistance] > 1;
  const auto until = std::chrono::steady_clock::now() + (forwarded ? 6 * grace : grace);
  while (std::chrono::steady_clock::now() < until) {
    const std::optional<Notice> n = next_notice();
    if (!n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if ((*n)[kVerdict] != 0) return failure_of(*n, false);
    if (earlier(*n, first)) first = *n;
  }
  if (first[kRank] != mine[kRank]) return failure_of(first, false);
  verdict_ = mine;
  verdict_[kVerdict] = 1;
  tell_everyone(verdict_, rank, world);
  return failure_of(mine, true);
}

std::string consequence_line(int my_rank, const FirstFailure& first) {
  return "rank " + std::to_string(my_rank) + ": stopped: rank " + std::to_string(first.rank) +
         (first.integrity ? " detected an attack first (its line is the verdict); this rank's "
                            "own failure followed from it"
                          : " failed first; this rank's own failure followed from it");
}

void await_abort(const FirstFailure& first, std::chrono::milliseconds patience) {
  std::this_thread::sleep_for(patience);
  MPI_Abort(MPI_COMM_WORLD, first.code);
  std::_Exit(first.code);
}

}  // namespace tt::comm
