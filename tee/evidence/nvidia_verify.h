// Offline verification of NVIDIA GPU evidence (tee/evidence/nvidia_evidence.h): the checks NVIDIA's
// local verifier makes before it trusts a GPU, made with OpenSSL and the bundled NVIDIA roots, with no
// network call (revocation only from the lists the user gives).
//
//   certificate chain  the GPU's chain leads to NVIDIA's device identity root (bundled, not the copy
//                      the chain carries), every certificate valid, none revoked by a given CRL
//   signature          ECDSA P-384 by the chain's leaf over SHA-384 of the SPDM transcript
//                      (Note [SPDM measurement transcript] in tee/evidence/spdm.h)
//   nonce              the signed GET_MEASUREMENTS request carries the verifier's challenge
//
// then, with reference integrity manifests (tee/evidence/rim.h), the RIMs' own signatures and every
// measurement against its golden values.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_evidence.h"
#include "tee/evidence/rim.h"
#include "tee/identity/x509.h"

namespace tt::tee::evidence {

enum class Check {
  CertificateChain,
  Signature,
  Nonce,
  RimSignature,
  RimVersion,
  Measurements,
  QeReport,        // TDX: the PCK key signed the quoting enclave's report
  AttestationKey,  // TDX: the quoting enclave's report vouches for the attestation key
  ChipId,          // SEV-SNP: the VCEK is the one of the chip the report names
  ReportedTcb,     // SEV-SNP: the VCEK was issued for the TCB the report claims
  TrustRoots,      // the roots are the vendors', or test roots explicitly allowed (Note [Test roots])
  Collateral,      // TDX: Intel's QE identity is signed under the root and current (tdx_collateral.h)
  QeIdentity,      // TDX: the quoting enclave is the one Intel's QE identity names, at an UpToDate TCB
  TcbStatus,       // TDX: Intel's TCB info for the platform's FMSPC puts it at an accepted TCB level
  TdxModule,       // TDX: MRSIGNERSEAM and SEAMATTRIBUTES are the TCB info's TDX module's
};

// "certificate chain", "signature", "nonce", "RIM signature", "RIM version", "measurements",
// "QE report", "attestation key", "chip id", "reported TCB", "trust roots", "collateral", "QE identity",
// "TCB status", "TDX module".
const char* check_name(Check check);

struct CheckOutcome {
  Check check;
  bool ok = false;
  std::string detail;  // what was checked and found, one line
};

struct EvidenceTrust {
  Certificate device_root;  // NVIDIA's device identity root (tee/evidence/bundled_roots.h)
  std::vector<std::shared_ptr<X509_crl_st>> crls;  // user-given revocation lists, any issuer in the chain
  std::optional<SpdmNonce> nonce;                  // the verifier's challenge; nullopt: freshness not checked
  std::optional<std::int64_t> at_unix_time;        // check certificate validity then (default: now)
  // Accept (--allow-expired-collateral): a revocation list past its nextUpdate still revokes; the
  // verifier reports it (tee/evidence/crl_currency.h).
  StaleCrl stale_crl = StaleCrl::Refuse;
};

// The three evidence checks, in order, each with its outcome; a check after a failed one still runs
// (a student sees every verdict), but the first failure is the refusal. Never throws on bad evidence.
std::vector<CheckOutcome> verify_gpu_evidence(const GpuEvidence& gpu, const EvidenceTrust& trust);

// The RIM's own signature (verify_rim_signature), its signing chain checked against `crls`, as a check
// outcome; a list of `crls` past its nextUpdate is a failed Collateral check naming it (expired_crl,
// tee/evidence/crl_currency.h) unless crls.stale accepts it.
CheckOutcome check_rim_signature(const Rim& rim, const Certificate& rim_root,
                                 std::optional<std::int64_t> at_unix_time, const RimCrls& crls);

// Each RIM is for this GPU's driver or VBIOS version (one RIM version outcome), and every active golden
// value matches (one measurements outcome; `comparison` receives the details to print). InputError when
// two RIMs claim the same index.
std::vector<CheckOutcome> check_against_rims(const GpuEvidence& gpu, const std::vector<Rim>& rims,
                                             GoldenComparison& comparison);

// The evidence field by field, for a student to read: chain, request, nonces, every measurement
// block by index, driver and VBIOS versions, every opaque field.
std::string describe(const GpuEvidence& gpu);

// How many of `crls` are issued by a certificate of `chain` or by `root`: the others say nothing about
// it (0: its revocation was not checked).
std::size_t applicable_crls(const std::vector<std::shared_ptr<X509_crl_st>>& crls, const Certificate& root,
                            const std::vector<Certificate>& chain);
// The revocation part of a chain check's detail, in words.
std::string revocation_text(std::size_t given, std::size_t applicable);

// ECDSA P-384 over SHA-384 of `data` by `signer`'s key, `signature` = r || s (48 + 48 bytes).
// False for a wrong signature, a key that is not P-384 or a signature of another length.
bool verify_ecdsa_p384(const Certificate& signer, ByteView data, ByteView signature);

// A revocation list from a PEM or DER file; InputError naming `flag` and the file otherwise.
std::shared_ptr<X509_crl_st> load_crl(const std::filesystem::path& path, const char* flag = "--crl");

}  // namespace tt::tee::evidence
