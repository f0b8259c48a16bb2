// Where a sealed message sits in its stream, and the counter that hands those places out.
//
// Code outside tee/ never builds an AEAD nonce: it seals through a tee::Aead at a StreamPosition,
// and only a MessageCounter makes one, (origin, 0), (origin, 1), ... in order (tee/detail/nonce.h
// turns a position into the 96-bit nonce and says why none repeats under a key). The caller's part
// of that argument is one MessageCounter per origin per key; this type makes everything else
// impossible to get wrong: a position cannot be made up, and a counter only goes up.
#pragma once
#include <cstdint>

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
class MessageCounter {
 public:
  explicit MessageCounter(std::uint32_t origin) : origin_(origin) {}
  // A counter that takes up an origin's stream at `next`: for a party that follows a stream it did
  // not start (the teaching adversary re-sealing a message at the position its clear header names)
  // and for tests. Never a way to seal twice: the same key and origin must not get two counters.
  static MessageCounter resume(std::uint32_t origin, std::uint64_t next) {
    MessageCounter c(origin);
    c.next_ = next;
    return c;
  }

  // The next unused position. Throws CryptoError once 2^64 - 1 positions have been drawn rather than
  // wrap (unreachable in practice: the ratchet rotates keys long before).
  StreamPosition next();
  std::uint32_t origin() const { return origin_; }
  // How many positions have been drawn so far (the counter the next one will carry).
  std::uint64_t next_counter() const { return next_; }

 private:
  std::uint32_t origin_;
  std::uint64_t next_ = 0;
};

}  // namespace tt::tee
