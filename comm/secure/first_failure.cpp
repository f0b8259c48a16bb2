#include "comm/secure/first_failure.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "comm/mpi_calls.h"
#include "comm/secure/seal_streams.h"

namespace tt::comm {

namespace {

constexpr int kFailureNoticeTag = FailureNotices::kTag;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
using Notice = FailureNotices::Notice;
using enum FailureNotices::Field;
constexpr int kIntegrityCode = static_cast<int>(ExitCode::kIntegrity);

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

// Note [Notices never lower a verdict] (first_failure.h): what a notice may claim.
bool well_formed(const Notice& n, int source) {
  const std::uint64_t code = n[kCode];
  return n[kRank] == static_cast<std::uint64_t>(source) && code >= 1 && code <= 3 &&
         n[kNotIntegrity] == (code == kIntegrityCode ? 0u : 1u) && n[kVerdict] <= 1;
}

// The next well-formed notice from another rank, if one has arrived (malformed ones are dropped).
// Note [Sizes before receives] (comm/transport.h): a matched probe takes each message off the queue
// with its size, and only a notice's size is received; anything else is refused unread (no buffer is
// sized by it), and so is everything while MPI fails here, since a failing rank must still settle.
std::optional<Notice> next_notice() {
  for (;;) {
    std::optional<ProbedMessage> m;
    try {
      m = probe_message(MPI_COMM_WORLD, MPI_ANY_SOURCE, kFailureNoticeTag);
    } catch (const RunError&) {
      return std::nullopt;
    }
    if (!m) return std::nullopt;
    if (m->bytes != sizeof(Notice)) continue;
    Notice n{};
    if (MPI_Mrecv(n.data(), kFields, MPI_UINT64_T, &m->handle, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
    if (well_formed(n, m->source)) return n;
  }
}

// Note [Notices never lower a verdict]: `own` is this rank's exit code; the result's code is the
// first failure's, raised to `own` when that is an integrity failure.
FirstFailure failure_of(const Notice& n, bool mine, int own) {
  FirstFailure out;
  out.mine = mine;
  out.rank = static_cast<int>(n[kRank]);
  out.code = own == kIntegrityCode ? own : static_cast<int>(n[kCode]);
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
    // A verdict that is not an integrity failure cannot precede ours if ours is one: dropped.
    if ((*n)[kNotIntegrity] > mine[kNotIntegrity]) continue;
    if ((*n)[kVerdict] != 0) return failure_of(*n, false, code);
    if (earlier(*n, first)) first = *n;
  }
  if (first[kRank] != mine[kRank]) return failure_of(first, false, code);
  verdict_ = mine;
  verdict_[kVerdict] = 1;
  tell_everyone(verdict_, rank, world);
  return failure_of(mine, true, code);
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
