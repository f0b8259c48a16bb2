// Emulated remote attestation (docs/design.md §5 "Keys").
//
// A rank proves three things to a verifier before any key is agreed with it, as a confidential GPU
// does with SPDM evidence:
//   who it is      its device certificate chains to the trusted vendor root (tee/identity/x509.h), is not
//                  revoked, and the evidence is signed by the certified device key;
//   what it runs   the measurements of its binary (SHA-256 of the file: `sha256sum` prints the same)
//                  and of its run configuration (SHA-256 of the canonical configuration text), which
//                  the verifier checks against a policy of reference measurements;
//   that it is live the evidence answers the verifier's fresh 32-byte nonce, so recorded evidence
//                  from an earlier session is refused.
// The evidence also carries the rank's ephemeral X25519 key, under the same signature: the key
// agreement is bound to the attested identity, so a party on the wire cannot substitute its own key
// without a certificate from the vendor. Without a trust anchor (`--attestation none`) only the
// signature is checked, by a key the evidence itself names: that proves nothing about who signed it.
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
#include "tee/identity/keys.h"
#include "tee/identity/x509.h"
#include "tee/secure_bytes.h"

namespace tt::tee {

using VerifierNonce = std::array<std::uint8_t, 32>;

struct Measurements {
  Sha256Digest binary{};  // SHA-256 of the executable file
  Sha256Digest config{};  // SHA-256 of the canonical run configuration text
  // SHA-256("teetrain measurement v2" || binary || config): one value per rank, to compare ranks.
  Sha256Digest combined() const;
};

// SHA-256 of the file at `path` (throws InputError naming it if unreadable).
Sha256Digest measure_binary(const std::filesystem::path& path);
Measurements measure(const std::filesystem::path& binary_path, std::string_view config);

struct Evidence {
  std::uint32_t rank = 0;
  Measurements measurement;
  VerifierNonce verifier_nonce{};
  PublicKey kx_public_key{};              // X25519 ephemeral key for the handshake
  PublicKey device_public_key{};          // Ed25519: must be the certificate's key when one is given
  std::vector<std::uint8_t> certificate;  // DER device certificate; empty without a root of trust
  Signature signature{};

  static constexpr std::size_t kFixedSize = 8 + 4 + 32 * 5 + 4 + 64;  // 240 + certificate
  static constexpr std::size_t kMaxSerializedSize = kFixedSize + kMaxCertificateBytes;

  // The bytes the device key signs: "TTEVID02" || be32(rank) || binary || config || nonce ||
  // kx key || device key || be32(certificate length) || certificate. The magic doubles as a domain
  // separator, the length makes the split unambiguous.
  std::vector<std::uint8_t> signed_bytes() const;
  std::vector<std::uint8_t> serialize() const;  // signed_bytes() || signature
  // Untrusted input: throws IntegrityError("malformed evidence: ...") on a wrong size, magic or length.
  static Evidence deserialize(ByteView bytes);
};

// Builds and signs the evidence of one rank (`certificate` empty when there is no root of trust).
Evidence make_evidence(std::uint32_t rank, const Measurements& measurement, const Ed25519KeyPair& device_key,
                       const std::vector<std::uint8_t>& certificate, const VerifierNonce& verifier_nonce,
                       const PublicKey& kx_public_key);

// Reference measurements a verifier accepts. An empty list means "only what the verifier itself
// runs" (filled in by whoever builds the policy: see comm/secure/attest_evidence.h).
struct VerifierPolicy {
  std::vector<Sha256Digest> binaries;
  std::vector<Sha256Digest> configs;
};

// What a verifier expects of one piece of evidence.
struct EvidenceCheck {
  const TrustAnchor* anchor = nullptr;  // null: no root of trust (the key is self-asserted)
  const VerifierPolicy* policy = nullptr;
  VerifierNonce nonce{};
  std::optional<std::uint32_t> rank;  // checked when set
};

struct VerifyResult {
  bool ok = false;
  std::string reason;  // "ok" or the first check that failed, in words
  explicit operator bool() const { return ok; }
};

// Checks, in this order, returning the first failure: the certificate (present, chains to the
// anchor, not revoked, its key is the evidence's device key); the signature; the rank; the nonce;
// the binary and the configuration measurements against the policy. Never throws on bad evidence.
VerifyResult verify(const Evidence& evidence, const EvidenceCheck& check);

VerifierNonce make_verifier_nonce();

// The handshake secret of two attested ranks: HKDF(ikm = X25519 shared secret, salt = SHA-256 of
// both serialized evidences in rank order, info = label), 32 bytes. The transcript covers both
// certificates, measurements, nonces and ephemeral keys: if the two ends saw different evidence,
// they derive different secrets, and key confirmation (comm/secure/secure_session.h) catches it.
SecretBytes derive_session_secret(const X25519KeyPair& mine, const Evidence& my_evidence,
                                  const Evidence& peer_evidence, std::string_view label);
// The same derivation over any transcript: HKDF(ikm = X25519(mine, peer_kx), salt = SHA-256(first ||
// second), info = label), 32 bytes; `first` and `second` are both ends' messages in rank order. The
// handshake with real evidence (comm/secure/real_evidence.h) binds its messages this way.
SecretBytes derive_transcript_secret(const X25519KeyPair& mine, const PublicKey& peer_kx, ByteView first,
                                     ByteView second, std::string_view label);

}  // namespace tt::tee
