// 96-bit deterministic nonces: 32-bit origin id || 64-bit per-origin counter, both big-endian.
//
// Why a nonce never repeats under one key:
//  1. Each key (one ratchet epoch of one link or group, or one sealed file) is used by a known set
//     of senders, and each sender has its own origin id (its rank; sealed files use their own
//     derived scheme, see sealed_file.h). Two senders therefore never produce the same 32-bit prefix.
//  2. Each origin draws nonces from exactly one NonceSequence per key, whose counter only goes up
//     and throws instead of wrapping, so one origin never produces the same 64-bit suffix twice.
//  3. A new key (rekey, restart, new file) starts a new sequence, never an old one under a new key's
//     name: the ratchet derives a fresh key for every epoch, so counters may restart from 0.
// The caller owns invariants 1 and 3 (one sequence per origin per key); this type enforces 2.
// Random nonces are avoided on purpose: they cost an RNG call per message and, at 96 bits, cap a
// key at 2^32 messages (SP 800-38D §8.3); a counter has neither cost.
#pragma once
#include <array>
#include <cstdint>

#include "tee/bytes.h"

namespace tt::tee {

inline constexpr std::size_t kNonceSize = 12;

struct Nonce {
  std::array<std::uint8_t, kNonceSize> bytes{};

  static Nonce make(std::uint32_t origin, std::uint64_t counter) {
    Nonce n;
    store_be32(n.bytes.data(), origin);
    store_be64(n.bytes.data() + 4, counter);
    return n;
  }
  std::uint32_t origin() const { return load_be32(bytes.data()); }
  std::uint64_t counter() const { return load_be64(bytes.data() + 4); }
  friend bool operator==(const Nonce&, const Nonce&) = default;
};

// The nonces of one origin under one key: (origin, 0), (origin, 1), ...
class NonceSequence {
 public:
  explicit NonceSequence(std::uint32_t origin, std::uint64_t first_counter = 0)
      : origin_(origin), next_(first_counter) {}

  // The next unused nonce. Throws CryptoError once 2^64 - 1 nonces have been drawn rather than wrap
  // (unreachable in practice: the ratchet rotates keys long before).
  Nonce next();
  std::uint32_t origin() const { return origin_; }
  // How many nonces have been drawn so far (the counter the next nonce will carry).
  std::uint64_t next_counter() const { return next_; }

 private:
  std::uint32_t origin_;
  std::uint64_t next_;
};

}  // namespace tt::tee
