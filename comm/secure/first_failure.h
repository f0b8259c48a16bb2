// Which rank's failure stopped a multi-rank job, so that only that one is reported as the attack.
//
// Note [One detection line]: one tampered message can fail on several ranks. With the forward-wire
// all-gather a flipped group message fails to open on the rank that received it from the adversary's
// link and again on every rank it was forwarded to; a rank whose peer stopped sees a closed link or a
// timeout. Each of them would print its own "INTEGRITY FAILURE" line, and a student cannot tell which
// line is the attack. So a failing rank, before it aborts the job, tells every other rank about its
// failure (a small notice on MPI_COMM_WORLD) and listens for theirs for a short grace period. All
// failing ranks order the notices they saw the same way — integrity failures before any other, then
// the earliest place in the run (step, bucket, phase, hop), then the rank nearest after the message's
// origin on the ring (the first to receive the tampered bytes), then the lowest rank — and only the
// first prints its own line, then announces the verdict and, after a short pause in which the others
// print theirs, calls MPI_Abort. A failing rank that hears a verdict stops listening.
//
// Note [Every rank prints a line]: a rank that has not failed (it is still computing, or waiting for
// a peer within its timeout) hears the verdict too: listen() keeps a thread that receives notices for
// the life of the job, and on a verdict it prints that this rank stopped because of it and waits for
// the abort. So every rank of a stopped job says why, not only the ones that failed themselves. The
// others print that they stopped because of the verdict (exit code: the first failure's, so an
// attack is exit 3 on every rank). A failure on a forwarded message listens longer, so that the rank
// behind the altered link, which got the bytes first, names it.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tee/crypto/purpose_keys.h"

namespace tt::comm {

struct FirstFailure {
  bool mine = true;  // this rank's failure is the first: print it, then announce()
  int rank = 0;      // the rank whose failure came first
  int code = 1;      // its exit code
  bool integrity = false;
};

// Collective among the ranks that fail (the others hear the verdict through listen()). main() holds
// one for the life of the process: the notices it sends are read by MPI until the job is aborted.
//
// Note [Notices never lower a verdict]: before the session's keys exist, notices travel in clear on
// MPI_COMM_WORLD, so anything on the host that can reach it can forge one. Such a notice may stop a
// run and name the failure the ranks report, but never make a rank's exit less severe than its own
// finding: a rank that detected an attack exits 3 whatever it hears. A notice whose sender is not the
// rank it names, whose exit code is not a failure's (1, 2 or 3), or that claims to be the verdict
// before a rank's own integrity failure while being none itself, is ignored.
//
// Note [Sealed notices]: once the attested session exists, arm() gives every rank the session's
// notice key (HKDF of the group secret, tee/identity/traffic_keys.h) and from then on each notice
// carries an HMAC-SHA256 over its fields under it. An armed rank ignores every notice whose tag does
// not verify: only an attested rank of this session can stop it, or name its failure.
class FailureNotices {
 public:
  // A notice's fields: the order key (Note [One detection line]), the exit code, and whether it is a
  // failure (a candidate) or the verdict (its sender prints it now). Smaller key = earlier.
  enum Field { kNotIntegrity, kStep, kBucket, kPhase, kHop, kDistance, kRank, kCode, kVerdict, kFields };
  using Notice = std::array<std::uint64_t, kFields>;
  // On the wire: the fields, then 32 bytes of HMAC-SHA256 (zero from an unarmed rank).
  static constexpr int kMacWords = 4;
  static constexpr int kWireWords = kFields + kMacWords;
  using Wire = std::array<std::uint64_t, kWireWords>;
  // Far above any tag of ours, on MPI_COMM_WORLD, which our transports never use (they duplicate it).
  static constexpr int kTag = 32000;

  FailureNotices() = default;
  FailureNotices(const FailureNotices&) = delete;
  FailureNotices& operator=(const FailureNotices&) = delete;
  ~FailureNotices();  // stops the listener

  // Note [Every rank prints a line]: starts the thread that receives notices while this rank has not
  // failed. Call once, after MPI is initialised, in a job of several ranks.
  void listen();
  // Note [Notices name virtual ranks]: a process that hosts its ranks as threads (Note [Virtual ranks],
  // comm/transport/virtual_ranks.h) hosts ranks p*K .. p*K+K-1 of a world of N*K, and its notices and
  // lines name those ranks, not the process: host_ranks(K) before the ranks start, and failed_rank(R)
  // for the hosted rank whose failure the process reports (its first to fail).
  void host_ranks(int per_process);
  void failed_rank(int rank);
  // Who this process's lines speak for: "rank R" (the failed one, or the process's only rank), or
  // "ranks A-B" (every hosted rank, none of which failed).
  std::string who() const;
  // Note [Sealed notices]: from now on notices are tagged under `key`, and untagged ones ignored.
  void arm(tee::NoticeKey key);

  // Sends this rank's notice for `error` (exit code `code`) to every other rank of MPI_COMM_WORLD and
  // listens for theirs for `grace` (longer for a failure on a forwarded message); returns whose
  // failure is the verdict. Call once; when the result is mine, print its line and then announce().
  FirstFailure settle(const std::exception& error, int code,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(500));
  // Tells every other rank that this rank's failure is the verdict, and pauses so that they can print
  // their lines before the caller aborts the job.
  void announce(std::chrono::milliseconds pause = std::chrono::milliseconds(300));

  // A notice with its tag under `key` (empty: untagged), and whether `w` is a notice from `source`
  // that this rank takes (well-formed; tagged under `key` when it has one). For tests that forge.
  // `per_process`: the ranks each process hosts (Note [Notices name virtual ranks]).
  static Wire seal(const Notice& n, const tee::NoticeKey* key);
  static std::optional<Notice> open(const Wire& w, int source, const tee::NoticeKey* key,
                                    int per_process = 1);

 private:
  std::optional<Notice> next_notice();  // from the listener's queue, else from MPI
  std::optional<Notice> receive();      // one notice from MPI, if one has arrived
  void stop_listening();
  void tell_everyone(const Notice& n, Wire& wire);

  std::mutex mutex_;  // key_ and queue_, shared with the listener
  std::optional<tee::NoticeKey> key_;
  std::deque<Notice> queue_;  // candidates the listener received while this rank had not failed
  std::jthread listener_;
  Notice mine_{};
  Wire mine_wire_{};  // read by the pending sends until the process ends
  Wire verdict_wire_{};
  std::atomic<int> per_process_{1};  // read by the listener
  std::atomic<int> failed_rank_{-1};
};

// What a rank that is not the verdict's had itself seen when the verdict came.
enum class OwnFailure {
  kNone,       // nothing: it was computing or waiting (Note [Every rank prints a line])
  kFollowing,  // a failure that follows from a stopped peer (a closed link, a timeout)
  kIntegrity,  // an integrity failure of its own: the same tampered input, or a forwarded message
};
// The line a rank stopped by `first` prints, instead of its own error when it failed too. A rank that
// detected an attack itself says so: with one input tampered on a disk that every rank reads, each
// detects it independently, and "followed from it" would be false.
// `who`: "rank R", or "ranks A-B" (FailureNotices::who).
std::string consequence_line(const std::string& who, const FirstFailure& first, OwnFailure own);
std::string consequence_line(int my_rank, const FirstFailure& first, OwnFailure own);

// For a rank that is not first: waits up to `patience` for the first rank's MPI_Abort to end this
// process, then aborts the job itself with the first failure's code. Never returns.
[[noreturn]] void await_abort(const FirstFailure& first,
                              std::chrono::milliseconds patience = std::chrono::milliseconds(10000));

}  // namespace tt::comm
