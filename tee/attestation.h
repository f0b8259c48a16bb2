// Emulated remote attestation (docs/design.md §5 "Keys").
//
// Each rank holds a device key pair (Ed25519, the stand-in for a GPU's fused identity key). To join,
// it answers a verifier's fresh 32-byte nonce with Evidence: its rank, a measurement of what it runs
// (SHA-256 over the binary and the run configuration), its device public key, the nonce, and the
// public half of an ephemeral X25519 key, all signed with the device key. Signing the X25519 key
// binds the key agreement to the attested identity: a man in the middle cannot substitute its own.
// The verifier checks the signature, the nonce (freshness), the measurement and, optionally, that
// the device key is on an allow-list, before it agrees any key with that rank.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/keys.h"
#include "tee/secure_bytes.h"

namespace tt::tee {

using Measurement = Sha256Digest;
using VerifierNonce = std::array<std::uint8_t, 32>;

// SHA-256("teetrain measurement v1" || be64(len) || binary bytes || be64(len) || config). The
// lengths make the split between binary and configuration unambiguous. Throws std::runtime_error
// naming the path if the binary cannot be read.
Measurement measure(const std::filesystem::path& binary_path, std::string_view config);

struct Evidence {
  std::uint32_t rank = 0;
  Measurement measurement{};
  PublicKey device_public_key{};
  VerifierNonce verifier_nonce{};
  PublicKey kx_public_key{};  // X25519 ephemeral key for the handshake
  Signature signature{};

  static constexpr std::size_t kSerializedSize = 8 + 4 + 32 * 4 + 64;  // 204

  // The bytes the device key signs: "TTEVID01" || be32(rank) || measurement || device key ||
  // nonce || kx key (everything but the signature; the magic doubles as a domain separator).
  std::vector<std::uint8_t> signed_bytes() const;
  // signed_bytes() || signature: exactly kSerializedSize bytes.
  std::vector<std::uint8_t> serialize() const;
  // Throws IntegrityError("malformed evidence: ...") on a wrong length or magic.
  static Evidence deserialize(ByteView bytes);
};

// Builds and signs the evidence of one rank.
Evidence make_evidence(std::uint32_t rank, const Measurement& measurement, const Ed25519KeyPair& device_key,
                       const VerifierNonce& verifier_nonce, const PublicKey& kx_public_key);

// What the verifier expects of a peer.
struct EvidencePolicy {
  Measurement measurement{};
  VerifierNonce nonce{};
  std::optional<std::uint32_t> rank;           // checked when set
  std::vector<PublicKey> allowed_device_keys;  // empty = any device key
};

struct VerifyResult {
  bool ok = false;
  // "ok", "bad signature", "rank mismatch", "stale nonce", "measurement mismatch",
  // "device key not in allow-list".
  std::string reason;
  explicit operator bool() const { return ok; }
};

// Checks, in this order: signature (nothing else in unsigned evidence means anything), rank,
// nonce, measurement, allow-list. Returns the first failure.
VerifyResult verify(const Evidence& evidence, const EvidencePolicy& policy);

// A fresh verifier nonce (32 random bytes).
VerifierNonce make_verifier_nonce();

// The handshake secret of two attested ranks: HKDF(ikm = X25519 shared secret,
// salt = SHA-256(serialized evidence of the lower rank || of the higher rank), info = label),
// 32 bytes. Both sides compute the same transcript, so a swapped or replayed evidence yields a
// different key and the first sealed message fails to open.
SecretBytes derive_session_secret(const X25519KeyPair& mine, const Evidence& my_evidence,
                                  const Evidence& peer_evidence, std::string_view label);

}  // namespace tt::tee
