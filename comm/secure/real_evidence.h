// The training handshake with REAL evidence (`train --attestation tdx|snp|tdx+gpu|snp+gpu`, docs/design.md
// §12): a rank proves itself with what its confidential VM (and GPUs) signed, instead of the emulated
// vendor's evidence (tee/identity/attestation.h). comm/ knows the message and the binding checks; how
// evidence is gathered on the hardware and verified against the vendors' roots is behind the two
// interfaces below, which engine/keys/real_attestation.h implements with tee/evidence/ (the code
// `gather-evidence` and `verify-evidence` run), so the handshake tests can run on any transport.
//
// On each link (secure_session.h step 2) a rank, answering its peer's verifier nonce N:
//   1. draws an ephemeral X25519 key K and derives challenge = kx_challenge(N, its rank, K)
//      (tee/identity/kx_binding.h), with `+gpu` also its GPUs' nonce (Note [GPU nonce from the challenge]);
//   2. has its hardware sign them (RealEvidenceProver) and sends the message below;
// and on receiving its peer's message it checks (check_real_message), in this order, naming the first
// failure: the message's form; that it is not its own evidence come back (reflection); that it comes
// from the rank the link leads to (relay); that it answers the nonce this rank sent on this link
// (stale nonce); then RealEvidenceVerifier: that the signed REPORTDATA is the challenge recomputed from
// the key received beside it (key substituted), the vendors' chains and signatures, the GPUs' nonce,
// and the verifier policy. Only then is the link secret derived (X25519 with K, over both messages).
//
// Note [Real evidence message]: the wire form, untrusted until checked:
//   "TTREAL01" | u8 CPU TEE (1 tdx, 2 snp) | u8 gpu (0, 1) | 2 zero bytes | be32 rank |
//   answered nonce (32) | X25519 key (32) | be32 n, the CPU evidence (n, 1 .. 64 KiB) |
//   be32 n, its certificates (n, 0 .. 64 KiB: SEV-SNP's VCEK chain, PEM or DER) |
//   be32 n, the GPU evidence (n, 0 .. 1 MiB: the attestation SDK's JSON; present exactly with gpu)
// The rank, nonce and kind are unsigned here: they only name a failure early. The binding itself is
// the hardware's signature over REPORTDATA = kx_challenge(nonce, rank, key): rewriting any of them
// changes the challenge, and the evidence no longer verifies.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/identity/attestation.h"
#include "tee/identity/keys.h"

namespace tt::comm {

enum class CpuTee : std::uint8_t { Tdx = 1, Snp = 2 };

// One way to attest with real hardware: a CPU TEE, with or without the VM's GPUs.
struct RealAttestationKind {
  CpuTee cpu = CpuTee::Tdx;
  bool gpu = false;
  const char* name = "tdx";  // as `--attestation` spells it
};
inline constexpr std::array<RealAttestationKind, 4> kRealAttestationKinds{{
    {.cpu = CpuTee::Tdx, .gpu = false, .name = "tdx"},
    {.cpu = CpuTee::Snp, .gpu = false, .name = "snp"},
    {.cpu = CpuTee::Tdx, .gpu = true, .name = "tdx+gpu"},
    {.cpu = CpuTee::Snp, .gpu = true, .name = "snp+gpu"},
}};
// The kind named `name`, or nullopt.
std::optional<RealAttestationKind> real_attestation_kind(std::string_view name);
const char* cpu_tee_name(CpuTee t);  // "Intel TDX", "AMD SEV-SNP"

// What a rank's hardware signed for one challenge.
struct RealEvidence {
  std::vector<std::uint8_t> cpu;        // a TDX v4 quote or an SEV-SNP report
  std::vector<std::uint8_t> cpu_certs;  // SEV-SNP: its VCEK (and ASK); TDX: empty, the PCK chain is inside
  std::vector<std::uint8_t> gpu;        // every GPU's evidence as the SDK's JSON; empty without +gpu
};

// Note [Real evidence message].
struct RealEvidenceMessage {
  RealAttestationKind kind;
  std::uint32_t rank = 0;
  tee::VerifierNonce answers{};  // the verifier nonce this evidence answers
  tee::PublicKey kx_public{};    // the sender's ephemeral X25519 key
  RealEvidence evidence;

  static constexpr std::size_t kFixedSize = 8 + 4 + 4 + 32 + 32 + 3 * 4;
  static constexpr std::size_t kMaxCpuBytes = std::size_t{64} << 10;
  static constexpr std::size_t kMaxCertBytes = std::size_t{64} << 10;
  static constexpr std::size_t kMaxGpuBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxSerializedSize = kFixedSize + kMaxCpuBytes + kMaxCertBytes + kMaxGpuBytes;

  std::vector<std::uint8_t> serialize() const;
  // Untrusted input: IntegrityError("malformed real evidence: ...") on a wrong magic, kind, length or size.
  static RealEvidenceMessage deserialize(tee::ByteView bytes);
};

// The prover's half: asks this rank's hardware to sign. Throws InputError where the hardware is
// absent (naming what is missing), RunError where it fails, IntegrityError where what came back does
// not answer the challenge.
class RealEvidenceProver {
 public:
  virtual ~RealEvidenceProver() = default;
  // `challenge` = kx_challenge(...); with kind.gpu the GPUs answer gpu_nonce_of(challenge).
  virtual RealEvidence gather(const RealAttestationKind& kind, const tee::Sha256Digest& challenge) = 0;
};

struct RealVerdict {
  bool ok = false;
  std::string reason;        // "ok", or the first check that failed, in words
  std::string measurements;  // what was verified, for the banner and the summary: "MRTD 1a2b.., ..."
  explicit operator bool() const { return ok; }
};

// One file of collateral a verifier judges evidence with (Note [Collateral in the agreed inputs],
// engine/keys/real_attestation.cpp).
struct CollateralDigest {
  std::string kind;    // "TCB info", "QE identity", "collateral chain", "evidence CRL 1", "GPU RIM 2", ...
  std::string file;    // the path as given, printable
  std::string sha256;  // of the file's bytes (hex)
};

// What the banner, the summary and the ranks' agreement record of a verifier.
struct RealVerifierFacts {
  bool test_roots = false;    // evidence under a test vendor's roots is accepted (--allow-test-roots)
  std::string policy_digest;  // SHA-256 (hex) of the policy's canonical text; "" without a policy
  std::size_t crls = 0;       // revocation lists given
  std::vector<CollateralDigest> collateral;  // every collateral file, in the table's order
};

// The verifier's half: the vendors' checks (the code verify-evidence runs) and the verifier policy.
class RealEvidenceVerifier {
 public:
  virtual ~RealEvidenceVerifier() = default;
  // Checks `evidence` as `kind` against `challenge` (REPORTDATA = report_data_of(challenge); GPUs:
  // gpu_nonce_of(challenge)). Never throws on bad evidence.
  virtual RealVerdict verify(const RealAttestationKind& kind, const RealEvidence& evidence,
                             const tee::Sha256Digest& challenge) const = 0;
  // One line for banners: the roots trusted, "test roots" when the test vendor's are, the policy.
  virtual std::string describe() const = 0;
  virtual RealVerifierFacts facts() const = 0;
};

// What AttestConfig carries for real attestation.
struct RealAttestation {
  RealAttestationKind kind;
  std::shared_ptr<RealEvidenceProver> prover;
  std::shared_ptr<const RealEvidenceVerifier> verifier;
};

// One link's view, for check_real_message.
struct RealLinkCheck {
  RealAttestationKind kind;
  std::uint32_t me = 0;       // this rank
  std::uint32_t peer = 0;     // the rank the link leads to
  tee::VerifierNonce mine{};  // the nonce this rank sent on the link
  tee::ByteView own_message;  // what this rank sent on the link (reflection)
  const RealEvidenceVerifier* verifier = nullptr;
};

// The checks above, in order. On success `out` holds the parsed message. Never throws on bad input.
RealVerdict check_real_message(tee::ByteView wire, const RealLinkCheck& check,
                               std::optional<RealEvidenceMessage>& out);

}  // namespace tt::comm
