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
// first announces the verdict, prints its own line and calls MPI_Abort; a rank that hears a verdict
// stops listening. The others print that they stopped because of it and wait for that abort (exit
// code: the first failure's, so an attack is exit 3 on every rank). A failure on a forwarded message
// listens longer, so that the rank behind the altered link, which got the bytes first, names it.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

namespace tt::comm {

struct FirstFailure {
  bool mine = true;  // this rank's failure is the first: print it
  int rank = 0;      // the rank whose failure came first
  int code = 1;      // its exit code
  bool integrity = false;
};

// Collective among the ranks that fail (the others never take part). main() holds one for the life of
// the process: the notices it sends are read by MPI until the job is aborted.
// Note [Notices never lower a verdict]: notices travel in clear on MPI_COMM_WORLD, so anything on the
// host that can reach it can forge one. A notice may therefore stop a run, and name the failure the
// ranks report, but never make a rank's exit less severe than its own finding: a rank that detected
// an attack exits 3 whatever it hears. A notice whose sender is not the rank it names, whose exit code
// is not a failure's (1, 2 or 3), or that claims to be the verdict before a rank's own integrity
// failure while being none itself, is ignored.
class FailureNotices {
 public:
  // A notice's fields: the order key (Note [One detection line]), the exit code, and whether it is a
  // failure (a candidate) or the verdict (its sender prints it now). Smaller key = earlier.
  enum Field { kNotIntegrity, kStep, kBucket, kPhase, kHop, kDistance, kRank, kCode, kVerdict, kFields };
  using Notice = std::array<std::uint64_t, kFields>;
  // Far above any tag of ours, on MPI_COMM_WORLD, which our transports never use (they duplicate it).
  static constexpr int kTag = 32000;
  // Sends this rank's notice for `error` (exit code `code`) to every other rank of MPI_COMM_WORLD and
  // listens for theirs for `grace` (longer for a failure on a forwarded message); returns whose
  // failure is the verdict. Call once.
  FirstFailure settle(const std::exception& error, int code,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(500));

 private:
  Notice mine_{};
  Notice verdict_{};
};

// The line a rank whose failure followed from `first` prints instead of its own error.
std::string consequence_line(int my_rank, const FirstFailure& first);

// For a rank that is not first: waits up to `patience` for the first rank's MPI_Abort to end this
// process, then aborts the job itself with the first failure's code. Never returns.
[[noreturn]] void await_abort(const FirstFailure& first,
                              std::chrono::milliseconds patience = std::chrono::milliseconds(10000));

}  // namespace tt::comm
