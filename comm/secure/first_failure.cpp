#include "comm/secure/first_failure.h"

#include <mpi.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "comm/mpi_calls.h"
#include "comm/secure/seal_streams.h"
#include "tee/digest.h"

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

// Note [Notices never lower a verdict] (first_failure.h): what a notice may claim.
bool well_formed(const Notice& n, int source, int per_process) {
  const std::uint64_t code = n[kCode];
  return n[kRank] / static_cast<std::uint64_t>(per_process) == static_cast<std::uint64_t>(source) &&
         code >= 1 && code <= 3 && n[kNotIntegrity] == (code == kIntegrityCode ? 0u : 1u) && n[kVerdict] <= 1;
}

// Note [Sealed notices]: the tag covers every field under a label of its own.
tee::Sha256Digest notice_mac(const Notice& n, const tee::NoticeKey& key) {
  constexpr std::string_view kLabel = "teetrain failure notice v1";
  std::vector<std::uint8_t> data(kLabel.begin(), kLabel.end());
  const auto* fields = reinterpret_cast<const std::uint8_t*>(n.data());
  data.insert(data.end(), fields, fields + sizeof(Notice));
  return tee::hmac_sha256(key.view(), data);
}

// A rank's notices waiting to be settled are few (one per failing rank, twice): a flood of forged
// ones beyond this is dropped instead of growing the queue.
constexpr std::size_t kQueuedNotices = 64;

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

FailureNotices::Wire FailureNotices::seal(const Notice& n, const tee::NoticeKey* key) {
  Wire w{};
  std::copy(n.begin(), n.end(), w.begin());
  if (key != nullptr) {
    const tee::Sha256Digest mac = notice_mac(n, *key);
    std::memcpy(w.data() + kFields, mac.data(), mac.size());
  }
  return w;
}

std::optional<Notice> FailureNotices::open(const Wire& w, int source, const tee::NoticeKey* key,
                                           int per_process) {
  Notice n{};
  std::copy(w.begin(), w.begin() + kFields, n.begin());
  if (!well_formed(n, source, per_process)) return std::nullopt;
  if (key == nullptr) return n;  // Note [Notices never lower a verdict]
  const tee::Sha256Digest mac = notice_mac(n, *key);
  if (CRYPTO_memcmp(mac.data(), w.data() + kFields, mac.size()) != 0) return std::nullopt;
  return n;
}

FailureNotices::~FailureNotices() {
  stop_listening();
}

void FailureNotices::arm(tee::NoticeKey key) {
  const std::lock_guard lock(mutex_);
  key_ = std::move(key);
}

// The next notice from another rank, if one has arrived; others are dropped: ill-formed ones and
// untagged ones on an armed rank. Note [Sizes before receives] (comm/transport.h): a matched probe
// takes each message off the queue with its size, and only a notice's size is received; anything else
// is refused unread (no buffer is sized by it), and so is everything while MPI fails here, since a
// failing rank must still settle.
std::optional<Notice> FailureNotices::receive() {
  for (;;) {
    std::optional<ProbedMessage> m;
    try {
      m = probe_message(MPI_COMM_WORLD, MPI_ANY_SOURCE, kFailureNoticeTag);
    } catch (const RunError&) {
      return std::nullopt;
    }
    if (!m) return std::nullopt;
    if (m->bytes != sizeof(Wire)) continue;
    Wire w{};
    if (MPI_Mrecv(w.data(), kWireWords, MPI_UINT64_T, &m->handle, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
    const std::lock_guard lock(mutex_);
    if (auto n = open(w, m->source, key_ ? &*key_ : nullptr, per_process_)) return n;
  }
}

std::optional<Notice> FailureNotices::next_notice() {
  {
    const std::lock_guard lock(mutex_);
    if (!queue_.empty()) {
      const Notice n = queue_.front();
      queue_.pop_front();
      return n;
    }
  }
  return receive();
}

// Note [Every rank prints a line]: a verdict heard while this rank has not failed stops it with a
// line of its own; other notices wait in the queue for settle(), should this rank fail too.
void FailureNotices::listen() {
  listener_ = std::jthread([this](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      const std::optional<Notice> n = receive();
      if (!n) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if ((*n)[kVerdict] != 0) {
        const FirstFailure first = failure_of(*n, false, 0);
        std::fprintf(stderr, "teetrain: %s\n", consequence_line(who(), first, OwnFailure::kNone).c_str());
        std::fflush(stderr);
        await_abort(first);
      }
      const std::lock_guard lock(mutex_);
      if (queue_.size() < kQueuedNotices) queue_.push_back(*n);
    }
  });
}

void FailureNotices::stop_listening() {
  if (!listener_.joinable()) return;
  listener_.request_stop();
  listener_.join();
}

// `wire` must outlive the sends: it is a member, alive until the process ends (MPI_Abort).
void FailureNotices::tell_everyone(const Notice& n, Wire& wire) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  {
    const std::lock_guard lock(mutex_);
    wire = seal(n, key_ ? &*key_ : nullptr);
  }
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(wire.data(), kWireWords, MPI_UINT64_T, peer, kFailureNoticeTag, MPI_COMM_WORLD, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

// Every failing rank announces its failure and listens. A verdict from another rank settles it at
// once; otherwise, at the end of its grace period, the rank whose failure is the earliest it has seen
// is the verdict: it prints its line and announces it. Two ranks can both announce one only if
// neither heard of the other's failure before its own deadline — but the later of the two started
// listening after the earlier one's announcement and hears it first. A failure on a forwarded message
// (received from a rank other than its origin) waits longer: a rank nearer the origin got the same
// bytes first and may still be opening them, and its line names the link the message was altered on.
FirstFailure FailureNotices::settle(const std::exception& error, int code, std::chrono::milliseconds grace) {
  stop_listening();  // from here this thread reads the notices, the queued ones first
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // A peer may be gone already: a failed send must not abort this rank before it has spoken.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // Note [Notices name virtual ranks]: the failed rank and its place on the ring of every rank.
  const int per_process = per_process_;
  const int failed = failed_rank_ >= 0 ? failed_rank_.load() : rank * per_process;
  mine_ = notice_of(error, code, failed, world * per_process);
  tell_everyone(mine_, mine_wire_);
  Notice first = mine_;
  const bool forwarded = mine_[kDistance] != kNone && mine_[kDistance] > 1;
  const auto until = std::chrono::steady_clock::now() + (forwarded ? 6 * grace : grace);
  while (std::chrono::steady_clock::now() < until) {
    const std::optional<Notice> n = next_notice();
    if (!n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // A verdict that is not an integrity failure cannot precede ours if ours is one: dropped.
    if ((*n)[kNotIntegrity] > mine_[kNotIntegrity]) continue;
    if ((*n)[kVerdict] != 0) return failure_of(*n, false, code);
    if (earlier(*n, first)) first = *n;
  }
  if (first[kRank] != mine_[kRank]) return failure_of(first, false, code);
  return failure_of(mine_, true, code);
}

void FailureNotices::announce(std::chrono::milliseconds pause) {
  Notice verdict = mine_;
  verdict[kVerdict] = 1;
  tell_everyone(verdict, verdict_wire_);
  std::this_thread::sleep_for(pause);
}

void FailureNotices::host_ranks(int per_process) {
  per_process_ = per_process;
}

void FailureNotices::failed_rank(int rank) {
  failed_rank_ = rank;
}

std::string FailureNotices::who() const {
  if (failed_rank_ >= 0) return "rank " + std::to_string(failed_rank_);
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  const int k = per_process_;
  if (k == 1) return "rank " + std::to_string(process);
  return "ranks " + std::to_string(process * k) + "-" + std::to_string(process * k + k - 1);
}

std::string consequence_line(int my_rank, const FirstFailure& first, OwnFailure own) {
  return consequence_line("rank " + std::to_string(my_rank), first, own);
}

std::string consequence_line(const std::string& who, const FirstFailure& first, OwnFailure own) {
  const std::string cause = who + ": stopped: rank " + std::to_string(first.rank) +
                            (first.integrity ? " detected an attack" : " failed");
  const std::string verdict = first.integrity ? " (its line is the verdict)" : "";
  switch (own) {
    case OwnFailure::kNone:
      return cause + verdict;
    case OwnFailure::kFollowing:
      return cause + " first" + verdict + "; this rank's own failure followed from it";
    case OwnFailure::kIntegrity:
      return cause + " first" + verdict + "; this rank detected an integrity failure too";
  }
  return cause + verdict;
}

void await_abort(const FirstFailure& first, std::chrono::milliseconds patience) {
  std::this_thread::sleep_for(patience);
  MPI_Abort(MPI_COMM_WORLD, first.code);
  std::_Exit(first.code);
}

}  // namespace tt::comm
