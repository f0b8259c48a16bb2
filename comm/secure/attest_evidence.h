// What a rank attests to, what it accepts of others, and the teaching helpers behind `teetrain attest`
// (docs/design.md §5 "Keys").
//
// AttestConfig says what a rank runs (binary + canonical run configuration -> measurements), which
// certified identity it signs with, which vendor root it trusts and which measurements it accepts
// (the policy). The handshake (secure_session.h) and the offline tools below read the same struct,
// so `teetrain attest --verify` checks exactly what start-up checks — except freshness: a saved
// evidence file carries the nonce it answered, and an offline verifier cannot know whether that
// nonce was fresh unless it is given the nonce it issued (--nonce).
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/secure/real_evidence.h"
#include "tee/errors.h"
#include "tee/identity/attestation.h"
#include "tee/identity/keys.h"
#include "tee/identity/x509.h"

namespace tt::comm {

// Attestation refused (on every rank: see establish_keys). An IntegrityError: exit code 3.
class AttestationError : public IntegrityError {
 public:
  using IntegrityError::IntegrityError;
};

enum class AttestationMode {
  Certified,  // identities certified by a vendor root, evidence verified against it (the default)
  None,       // no root of trust: fresh self-asserted keys; an on-path adversary can read everything
  Real,       // real hardware evidence (AttestConfig::real; comm/secure/real_evidence.h)
};
const char* attestation_mode_name(AttestationMode m);

struct AttestConfig {
  AttestationMode mode = AttestationMode::Certified;
  std::shared_ptr<const tee::TrustAnchor> anchor;       // Certified: the vendor root (+ CRL) trusted
  std::shared_ptr<const tee::DeviceIdentity> identity;  // Certified: this rank's key + certificate
  std::filesystem::path binary = "/proc/self/exe";      // measured with the run configuration
  std::string run_config;                               // canonical run configuration, same on every rank
  // Reference measurements; an empty list accepts only this rank's own binary / configuration.
  tee::VerifierPolicy policy;
  std::chrono::milliseconds timeout{0};  // per handshake message; 0: the transport's
  // Real: the kind, how this rank gathers its evidence and how it verifies its peers'.
  std::optional<RealAttestation> real;
};

// measure(binary, run_config). Throws InputError if the binary cannot be read.
tee::Measurements expected_measurement(const AttestConfig& config);

// The policy a verifier applies: config.policy with empty lists filled by `own` measurements.
tee::VerifierPolicy effective_policy(const AttestConfig& config, const tee::Measurements& own);

// The key this rank signs evidence with: the identity's, or (mode None) a fresh one.
// Throws InputError when a certified config has no identity.
const tee::Ed25519KeyPair& signing_key(const AttestConfig& config, std::optional<tee::Ed25519KeyPair>& fresh);

// Policy files: one reference measurement per line, "binary <64 hex>" or "config <64 hex>"; blank
// lines and '#' comments ignored. InputError naming the file and line on anything else.
tee::VerifierPolicy load_policy(const std::filesystem::path& path);
std::string policy_text(const tee::Measurements& m);  // the policy accepting exactly `m`

// Whether a trust anchor checks revocation. Required unless the user opts out explicitly
// (--no-revocation-check), which every report then flags: a missing list must never mean "nothing
// is revoked".
enum class RevocationCheck { Required, OptedOut };

// Loads the certified parts of a config: the trust root with its CRL beside it (ROOT.crl; with
// OptedOut, the root alone) and the identity (a key and the certificate for it). InputError naming
// the file when either is unusable, and saying how to get the CRL when it is missing; IntegrityError
// for a genuine list that is stale, unless `stale` accepts it (--allow-expired-crl; Note [Revocation
// list freshness], tee/identity/x509.h). Whether the identity is trusted is for the verifiers to say:
// a revoked or foreign certificate is refused in the handshake on every rank (exit 3), its holder's
// included.
std::shared_ptr<const tee::TrustAnchor> load_trust_anchor(
    const std::filesystem::path& root_pem, RevocationCheck revocation = RevocationCheck::Required,
    tee::StaleCrl stale = tee::StaleCrl::Refuse);
std::shared_ptr<const tee::DeviceIdentity> load_identity(const std::filesystem::path& pem);

// Evidence of this process as `rank`, answering `nonce` (a throwaway X25519 key is bound in): what
// `teetrain attest --out FILE` saves.
tee::Evidence make_local_evidence(const AttestConfig& config, std::uint32_t rank,
                                  const tee::VerifierNonce& nonce);

// Checks evidence against `expect`'s anchor and policy (empty lists: `expect`'s own measurements),
// optionally its rank and nonce. Without a nonce, the evidence's own nonce is accepted (offline use).
tee::VerifyResult verify_evidence(const tee::Evidence& evidence, const AttestConfig& expect,
                                  std::optional<std::uint32_t> rank = std::nullopt,
                                  std::optional<tee::VerifierNonce> nonce = std::nullopt);

// Evidence files are the serialized bytes (tee::Evidence::serialize). save: written to a temporary
// name and renamed. load: InputError if unreadable, IntegrityError if malformed.
void save_evidence(const std::filesystem::path& path, const tee::Evidence& evidence);
tee::Evidence load_evidence(const std::filesystem::path& path);

// Every field of the evidence with what it proves, for a student to read. Evidence holds no secret.
std::string describe(const tee::Evidence& evidence);

}  // namespace tt::comm
