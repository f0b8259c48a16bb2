// In-process transport: N ranks as threads of one process, on the production in-process mailbox
// (comm/transport/local_mailbox.h, which `--ranks-per-process` runs on), with fault injection in front.
//
// For tests: ring and collective tests without mpirun, ThreadSanitizer runs, and the TEE security
// tests, which need an adversary on the wire. A FaultPlan lets that adversary drop, flip a bit in,
// truncate, replay, reorder, delay or inflate a chosen message; the faults are applied here, test-side,
// to what a rank sends, before the mailbox gets it, so the mailbox's semantics are the production
// ones (MpiTransport's: per (sender, receiver, tag) messages are matched in send order to receives in
// post order; sends are buffered; a message longer than the posted buffer is refused unread with a
// FramingError, Note [Sizes before receives] in comm/transport.h; a shorter one completes with its real
// length).
#pragma once
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "comm/transport.h"

namespace tt::comm {

enum class FaultKind {
  Drop,      // the message never arrives (the receiver times out)
  FlipBit,   // one bit of the payload is inverted
  Truncate,  // only the first keep_bytes bytes arrive
  Replay,    // the previous message on the same link is delivered again instead of this one
  Reorder,   // this message and the next one on the same link swap places
  Delay,     // the message (and, as on a stream, everything behind it on its tag) arrives `delay` later
  Inflate,   // the message grows to grow_to bytes (zeros appended): longer than its receive posted for
};
const char* fault_name(FaultKind k);

inline constexpr int kAny = -1;

// Which message to hit: the `index`-th message (0 = first) among those matching src/dst/tag
// (kAny matches anything). A rule fires at most once.
struct FaultRule {
  FaultKind kind = FaultKind::Drop;
  int src = kAny;
  int dst = kAny;
  int tag = kAny;
  std::size_t index = 0;
  std::size_t bit = 0;                   // FlipBit: bit index, modulo the payload's bit length
  std::size_t keep_bytes = 0;            // Truncate: bytes that arrive (clamped below the size)
  std::chrono::milliseconds delay{100};  // Delay
  std::size_t grow_to = 0;               // Inflate: bytes that arrive (at least the message's own)
};

struct FaultPlan {
  std::vector<FaultRule> rules;
  FaultPlan& add(const FaultRule& r) {
    rules.push_back(r);
    return *this;
  }
};

class LocalWorld;

namespace detail {
class FaultWire;
}

class InprocWorld {
 public:
  explicit InprocWorld(int ranks, FaultPlan plan = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000));
  ~InprocWorld();
  InprocWorld(const InprocWorld&) = delete;
  InprocWorld& operator=(const InprocWorld&) = delete;

  int size() const { return static_cast<int>(transports_.size()); }
  Transport& transport(int rank) { return *transports_.at(static_cast<std::size_t>(rank)); }

  // Runs fn(transport of rank r) on one thread per rank and joins them. Returns, per rank, the
  // exception it ended with (null when it returned normally).
  std::vector<std::exception_ptr> run(const std::function<void(Transport&)>& fn);

  // Faults that actually fired so far, in firing order (a test checks its fault really happened).
  std::vector<FaultKind> faults_fired() const;

 private:
  std::unique_ptr<LocalWorld> world_;        // the mailbox and its ranks' own transports
  std::unique_ptr<detail::FaultWire> wire_;  // the plan's adversary in front of it
  std::vector<std::unique_ptr<Transport>> transports_;
};

}  // namespace tt::comm
