// Key rotation: a chain of traffic secrets, one per epoch, and the policy that says when to move on.
//
//   secret[0]     = the stream's secret (32 bytes, a StreamSecret: traffic_keys.h derives it)
//   secret[e+1]   = HKDF-Expand(secret[e], "teetrain rekey" || be64(e+1), 32)
//   key[e]        = HKDF-Expand(secret[e], "teetrain key" || cipher name, cipher key size)
//
// Both ends of a link (or every member of a group) start from the same secret and apply the same
// policy to the same message sequence, so they advance in lock-step without talking; the epoch goes
// into every message's associated data, so a message sealed in the wrong epoch fails to open.
// The old secret is wiped on advance, so a key compromised later does not reveal the traffic of
// earlier epochs. That holds from the first advance on: until then the epoch-0 secret lives here, and
// the session secrets it was derived from live until setup ends (engine/keys/tee_session.h wipes them once
// the dataset and checkpoint keys are released). A memory dump taken during epoch 0 reveals epoch 0.
//
// Default limits (NIST SP 800-38D): with deterministic 96-bit nonces the 2^32-invocation limit of
// §8.3 (random IVs) does not apply; what remains is the per-message limit (2^36-32 bytes, enforced
// by Aead) and keeping the data under one key small enough that the confidentiality bound
// (~ (bytes/16)^2 / 2^128) stays negligible. 64 GiB (2^32 AES blocks, advantage ~2^-64) and 2^31
// messages per key are well inside both, and match TLS 1.3's order of magnitude (RFC 8446 §5.5).
// The CLI's --rekey-mb lowers max_bytes.
#pragma once
#include <cstdint>

#include "tee/crypto/aead.h"
#include "tee/crypto/purpose_keys.h"

namespace tt::tee {

struct RekeyPolicy {
  std::uint64_t max_messages = std::uint64_t{1} << 31;
  std::uint64_t max_bytes = std::uint64_t{64} << 30;  // 64 GiB

  static RekeyPolicy from_megabytes(std::uint64_t mb) {
    RekeyPolicy p;
    if (mb > 0 && mb < (p.max_bytes >> 20)) p.max_bytes = mb << 20;
    return p;
  }
};

class KeyRatchet {
 public:
  // `initial_secret` must be 32 bytes (an HKDF output); it is taken over and wiped on advance. Typed: a
  // ratchet starts only from a stream's secret, never from the link or group secret it came from.
  KeyRatchet(StreamSecret initial_secret, Cipher cipher, RekeyPolicy policy = {});

  std::uint64_t epoch() const { return epoch_; }
  Cipher cipher() const { return cipher_; }
  const RekeyPolicy& policy() const { return policy_; }
  // The AEAD key of the current epoch (cipher_key_size(cipher) bytes).
  const TrafficKey& key() const { return key_; }

  // Counts one sealed (or opened) message of `bytes` plaintext bytes under the current key.
  // Returns true when the policy says the key is used up: call advance() before the next message.
  bool record(std::uint64_t bytes);
  bool exhausted() const;
  std::uint64_t messages() const { return messages_; }
  std::uint64_t bytes() const { return bytes_; }

  // Moves to the next epoch: derives the next secret and key, wipes the old ones, resets counters.
  void advance();

 private:
  void derive_key();

  Cipher cipher_;
  RekeyPolicy policy_;
  std::uint64_t epoch_ = 0;
  StreamSecret secret_;  // this epoch's
  TrafficKey key_;
  std::uint64_t messages_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace tt::tee
