// Where a sealed message sits in its stream, and the counter that hands those places out.
//
// Code outside tee/ never builds an AEAD nonce: it seals through a tee::Aead at a StreamPosition,
// and only a MessageCounter makes one, (origin, 0), (origin, 1), ... in order (tee/detail/nonce.h
// turns a position into the 96-bit nonce and says why none repeats under a key). The caller's part
// of that argument is one MessageCounter per origin per key; this type makes everything else
// impossible to get wrong: a position cannot be made up, and a counter only goes up.
#pragma once
#include <cstdint>
#include <limits>
#include <utility>

namespace tt::tee {

class MessageCounter;

// One message's place: its origin (the sending rank) and its index in the origin's stream under one
// key. Copyable (a position travels with a message's ticket to the thread or device that seals it),
// never constructible outside MessageCounter.
class StreamPosition {
 public:
  std::uint32_t origin() const { return origin_; }
  std::uint64_t counter() const { return counter_; }
  friend bool operator==(const StreamPosition&, const StreamPosition&) = default;

 private:
  friend class MessageCounter;
  StreamPosition(std::uint32_t origin, std::uint64_t counter) : origin_(origin), counter_(counter) {}
  std::uint32_t origin_;
  std::uint64_t counter_;
};

// The positions of one origin under one key: (origin, 0), (origin, 1), ... A new key starts a new
// counter (the ratchet derives a fresh key for every epoch, so counters may restart from 0).
//
// Note [A counter is never duplicated]: nonce uniqueness rests on one counter per origin per key, so
// this type has no way to make a second counter that goes on where another is: it cannot be copied
// (a copy would hand out the original's next positions again), a moved-from counter is spent, and
// there is no "resume at n". A party
// that sees only some messages of a stream (the teaching relay, which re-seals what it intercepts at
// the position the clear header names) owns one counter for that stream and moves it forward with
// skip_to, which refuses to go back; tests that need a position other than 0 do the same on a counter
// of their own (tests/common/positions.h).
class MessageCounter {
 public:
  explicit MessageCounter(std::uint32_t origin) : origin_(origin) {}
  MessageCounter(const MessageCounter&) = delete;
  MessageCounter& operator=(const MessageCounter&) = delete;
  // Moving hands the stream over: the moved-from counter is left exhausted (its next() throws), so
  // the stream still has one counter.
  MessageCounter(MessageCounter&& other) noexcept
      : origin_(other.origin_), next_(std::exchange(other.next_, kExhausted)) {}
  MessageCounter& operator=(MessageCounter&& other) noexcept {
    if (this != &other) {
      origin_ = other.origin_;
      next_ = std::exchange(other.next_, kExhausted);
    }
    return *this;
  }

  // The next unused position. Throws CryptoError once 2^64 - 1 positions have been drawn rather than
  // wrap (unreachable in practice: the ratchet rotates keys long before).
  StreamPosition next();
  // Position `counter`, passing over those before it (never handed out afterwards): for a party that
  // follows a stream it sees only part of. Throws CryptoError if `counter` was already passed (it
  // would be handed out twice) or is the exhausted value 2^64 - 1.
  StreamPosition skip_to(std::uint64_t counter);
  std::uint32_t origin() const { return origin_; }
  // How many positions have been drawn so far (the counter the next one will carry).
  std::uint64_t next_counter() const { return next_; }

 private:
  // Never handed out: "next_ == kExhausted" means the counter is spent.
  static constexpr std::uint64_t kExhausted = std::numeric_limits<std::uint64_t>::max();
  std::uint32_t origin_;
  std::uint64_t next_ = 0;
};

}  // namespace tt::tee
