// What a rank attests to, and the teaching helpers behind `teetrain attest` (docs/design.md §5 "Keys").
//
// AttestConfig says what a rank runs (binary + canonical run configuration → measurement), which
// device key it signs with, and which device keys it accepts. The handshake (secure_session.h) and the
// offline tools below read the same struct, so `teetrain attest --verify` checks exactly what
// start-up checks — except freshness: a saved evidence file carries the nonce it answered, and an
// offline verifier has no way to know whether that nonce was fresh.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tee/attestation.h"
#include "tee/errors.h"
#include "tee/keys.h"

namespace tt::comm {

// Attestation refused (on every rank: see establish_keys). An IntegrityError: exit code 3.
class AttestationError : public tee::IntegrityError {
 public:
  using tee::IntegrityError::IntegrityError;
};

struct AttestConfig {
  std::filesystem::path binary = "/proc/self/exe";  // measured with the run configuration
  std::string run_config;                           // canonical run configuration, same on every rank
  std::filesystem::path device_key_pem;             // Ed25519 PKCS#8 PEM; empty: a fresh key per run
  std::vector<tee::PublicKey> allowed_device_keys;  // empty: any device key
  std::chrono::milliseconds timeout{0};             // per handshake message; 0: the transport's

  // Test hooks (never set by the CLI).
  std::optional<tee::Measurement> measurement_override;  // claim this instead of measure(binary, config)
  bool corrupt_evidence = false;                         // flip a signature bit in what this rank sends
};

// measure(binary, run_config), or the override. Throws InputError if the binary cannot be read.
tee::Measurement expected_measurement(const AttestConfig& config);

// The device key of `config`: loaded from device_key_pem (InputError naming the file on failure), or
// freshly generated.
tee::Ed25519KeyPair load_device_key(const AttestConfig& config);

// An allow-list file: one 64-hex-digit Ed25519 public key per line; blank lines and '#' comments
// ignored. InputError naming the file and line on anything else.
std::vector<tee::PublicKey> load_allow_list(const std::filesystem::path& path);

// Evidence of this process as `rank`, answering `nonce` (a throwaway X25519 key is bound in): what
// `teetrain attest --out FILE` saves.
tee::Evidence make_local_evidence(const AttestConfig& config, std::uint32_t rank,
                                  const tee::VerifierNonce& nonce);

// Checks evidence against `expect` (measurement of its binary and run_config, its allow-list),
// optionally its rank and nonce. Without a nonce, the evidence's own nonce is accepted (offline use).
tee::VerifyResult verify_evidence(const tee::Evidence& evidence, const AttestConfig& expect,
                                  std::optional<std::uint32_t> rank = std::nullopt,
                                  std::optional<tee::VerifierNonce> nonce = std::nullopt);

// Evidence files are the 204 serialized bytes (tee::Evidence::serialize). save: written to a
// temporary name and renamed. load: InputError if unreadable, IntegrityError if malformed.
void save_evidence(const std::filesystem::path& path, const tee::Evidence& evidence);
tee::Evidence load_evidence(const std::filesystem::path& path);

// A multi-line, human-readable dump of every field in hex, and whether the signature verifies.
// Evidence holds no secret, so all of it may be printed.
std::string describe(const tee::Evidence& evidence);

}  // namespace tt::comm
