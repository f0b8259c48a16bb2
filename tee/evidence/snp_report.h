// AMD SEV-SNP attestation reports (AMD's "SEV Secure Nested Paging Firmware ABI Specification",
// ATTESTATION_REPORT, report versions 2 to 5: always 1184 bytes, little-endian), verified offline
// against AMD's root key (ARK) of the chip's processor family (bundled, tee/evidence/roots/):
//
//   0x000 VERSION (4) | GUEST_SVN (4) | POLICY (8) | FAMILY_ID (16) | IMAGE_ID (16) | VMPL (4)
//   0x034 SIGNATURE_ALGO (4: 1 = ECDSA P-384 with SHA-384) | CURRENT_TCB (8) | PLATFORM_INFO (8)
//   0x048 signer info (4: AUTHOR_KEY_EN bit 0, MASK_CHIP_KEY bit 1, SIGNING_KEY bits 4:2, 0 = VCEK)
//   0x050 REPORT_DATA (64) | MEASUREMENT (48) | HOST_DATA (32) | ID_KEY_DIGEST (48)
//   0x110 AUTHOR_KEY_DIGEST (48) | REPORT_ID (32) | REPORT_ID_MA (32) | REPORTED_TCB (8)
//   0x188 CPUID family, model, stepping (version 3 on) | 0x1A0 CHIP_ID (64) | COMMITTED_TCB (8)
//   0x1E8 current, committed firmware (build, minor, major) | 0x1F0 LAUNCH_TCB (8)
//   0x1F8 launch, current mitigation vectors (version 5 on) | 0x2A0 SIGNATURE (512)
//
// Note [SEV-SNP signature]: the VCEK, an ECDSA P-384 key unique to one chip at one TCB version that
// AMD's ASK certifies, signs SHA-384 of bytes 0 .. 0x2A0. SIGNATURE holds r and s as 72-byte
// little-endian fields (their top 24 bytes zero), then zeros: unlike SPDM's and Intel's big-endian
// r || s, so they are reversed into 48-byte big-endian scalars before the ECDSA check.
//
// The checks: the VCEK chains through the family's ASK to its ARK (RSA-PSS SHA-384 signatures); the
// report's signature verifies under the VCEK's key; the VCEK is the one of this chip (its hwID
// extension is CHIP_ID) at this TCB (its SPL extensions are REPORTED_TCB); REPORT_DATA carries the
// verifier's challenge. Not checked here: whether the TCB is recent enough, whether MEASUREMENT is
// the launch digest of the image the verifier expects, the ID block's keys, VMPL and the policy (the
// debug bit is printed and flagged): what is acceptable there is the verifier's policy, not a fact.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/report_data.h"
#include "tee/identity/x509.h"

namespace tt::tee::evidence {

inline constexpr std::size_t kSnpReportBytes = 1184;
inline constexpr std::size_t kSnpSignedBytes = 0x2A0;
inline constexpr std::size_t kSnpChipIdBytes = 64;

enum class SnpSigningKey : std::uint8_t { Vcek = 0, Vlek = 1, None = 7 };

struct SnpReport {
  std::string source;
  std::vector<std::uint8_t> bytes;  // the whole report, kSnpReportBytes

  ByteView field(std::size_t offset, std::size_t size) const { return ByteView(bytes).subspan(offset, size); }
  std::uint64_t number(std::size_t offset, std::size_t size) const;  // little-endian
  std::uint32_t version() const { return static_cast<std::uint32_t>(number(0x00, 4)); }
  std::uint64_t policy() const { return number(0x08, 8); }
  std::uint64_t reported_tcb() const { return number(0x180, 8); }
  SnpSigningKey signing_key() const { return static_cast<SnpSigningKey>((number(0x48, 4) >> 2) & 7); }
  bool debug_allowed() const { return ((policy() >> 19) & 1U) != 0; }
  ByteView signed_bytes() const { return field(0, kSnpSignedBytes); }
  ByteView report_data() const { return field(0x50, kReportDataBytes); }
  ByteView measurement() const { return field(0x90, 48); }
  ByteView chip_id() const { return field(0x1A0, kSnpChipIdBytes); }
};

// Whether `bytes` are, by size, version and signature algorithm, an SEV-SNP report: 1184 bytes,
// VERSION 2 to 5, SIGNATURE_ALGO 1. (A TDX quote starts with version 4 and TEE type 0x81, and is
// never 1184 bytes; NVIDIA's evidence is text.)
bool looks_like_snp_report(ByteView bytes);
// Throws InputError naming the field that is malformed (or missing: the report is cut short).
SnpReport parse_snp_report(ByteView bytes, const std::string& where);

// The VCEK file as AMD's key distribution service serves it (one DER certificate) or PEM, the VCEK
// first, optionally followed by the ASK and ARK (only ever used to build the path, never trusted).
// InputError naming the file otherwise.
std::vector<Certificate> load_vcek(const std::filesystem::path& path);

// What the VCEK's AMD extensions (OIDs under 1.3.6.1.4.1.3704.1) say; empty where absent.
struct VcekExtensions {
  std::string product;                             // productName: "Milan-B0"
  std::optional<std::array<std::uint8_t, 8>> tcb;  // the SPL extensions as TCB_VERSION bytes
  std::vector<std::uint8_t> hwid;                  // hwID: the chip's CHIP_ID
  std::string problem;                             // why `tcb` is nullopt
};
VcekExtensions read_vcek_extensions(const Certificate& vcek);

// A TCB_VERSION (8 bytes) by component, in Milan's and Genoa's layout: "boot loader 3, TEE 0, SNP 8,
// microcode 115 (bytes ...)".
std::string snp_tcb_text(ByteView tcb);

struct SnpTrust {
  std::vector<AmdRoot> roots;  // amd_roots(), or the one root the user gave
  std::vector<std::shared_ptr<X509_crl_st>> crls;
  std::optional<ReportData> report_data;  // nullopt: not checked
  std::optional<std::int64_t> at_unix_time;
  // Accept (--allow-expired-collateral): a revocation list past its nextUpdate still revokes; the
  // verifier reports it (tee/evidence/crl_currency.h).
  StaleCrl stale_crl = StaleCrl::Refuse;
};

// The root the VCEK must lead to: the one whose ASK issued it, else a root given without an ASK (the
// ASK must then come with the VCEK); null when none (a VCEK of a family not bundled).
const AmdRoot* root_for(const SnpTrust& trust, const Certificate& vcek);

// How many of trust.crls are issued by a certificate of the VCEK's path (the VCEK, the certificates
// given with it, its family's ASK and ARK): 0 means its revocation was not checked.
std::size_t applicable_crls(const SnpTrust& trust, const std::vector<Certificate>& vcek_chain);

// VCEK chain, report signature, chip id, reported TCB, REPORT_DATA; each with its outcome
// (Check values: CertificateChain, Signature, ChipId, ReportedTcb, Nonce). Never throws on bad evidence.
std::vector<CheckOutcome> verify_snp_report(const SnpReport& report,
                                            const std::vector<Certificate>& vcek_chain,
                                            const SnpTrust& trust);

// Every field: the policy and platform info decoded, the TCB versions by component, the firmware.
std::string describe(const SnpReport& report);
// The VCEK chain as given, and what the VCEK's AMD extensions say (product, TCB, hwID).
std::string describe_vcek(const std::vector<Certificate>& vcek_chain);

}  // namespace tt::tee::evidence
