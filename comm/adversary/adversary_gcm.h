// The relay's arithmetic (comm/adversary/adversary_relay.h): what a party that holds an AES-GCM key learns
// about a message's associated data from its tag.
//
// Associated data is authenticated, not secret. GCM's tag is GHASH_H(AD || ciphertext || lengths)
// XOR E_K(J0), and GHASH is linear over GF(2) in every bit of the AD. Whoever holds the key knows H and
// E_K(J0), so one genuine tag is 128 linear equations in the AD's bits: when only a few bits are
// unknown — a sealed ring message's step, bucket, phase, hop, chunk, segment and origin are small
// integers, everything else of its 75 bytes is known — they are the unique solution. That is how the
// relay re-seals a message it cannot see the context of: solve the AD under the key it shares with the
// sender, check it by opening, seal again under the key it shares with the receiver.
//
// Bits are numbered as GCM numbers them: bit 8*i + j is bit j (0 = most significant) of byte i.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tee/crypto/aead.h"
#include "tee/crypto/stream_position.h"
#include "tee/secure_bytes.h"

namespace tt::comm::gcm {

// An element of GF(2^128) in GCM's bit order: `hi` holds bytes 0..7 big-endian, bit 0 of byte 0 is x^0.
struct Block {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  bool operator==(const Block&) const = default;
};
Block load(const std::uint8_t* sixteen_bytes);
Block mul(Block x, Block y);
Block power(Block x, std::uint64_t e);
Block inverse(Block x);  // x^(2^128 - 2); inverse(0) = 0

struct Opened {
  std::vector<std::uint8_t> aad;    // the template with the unknown bits solved
  std::vector<std::uint8_t> plain;  // the message, opened (tag verified) with that AD
};

// Solves the bits `unknown` of `aad_template` (the rest is known) from `tag`, the AES-256-GCM tag of
// `ciphertext` under `key` at stream position `at`, and opens the message with the result. nullopt when no
// assignment of the unknown bits makes the tag verify (another key, another stream, a forgery).
std::optional<Opened> solve_and_open(const tee::SecretBytes& key, const tee::StreamPosition& at,
                                     tee::ByteView ciphertext, const tee::Tag& tag,
                                     std::vector<std::uint8_t> aad_template,
                                     const std::vector<std::size_t>& unknown);

}  // namespace tt::comm::gcm
