// A TEST VENDOR, for tests only: labelled test roots ("teetrain TEST ... - not a vendor" in every
// subject) and, under them, evidence in the vendors' real formats, signed as the real hardware signs
// it, so that tee/evidence's unchanged checks accept it under those roots (Note [Test roots] in
// tee/evidence/bundled_roots.h) and refuse it under the vendors' bundled ones:
//
//   Intel TDX v4 quote   PCK leaf -> PCK platform CA -> SGX root (ECDSA P-256); the PCK key signs the QE
//                        report, whose REPORTDATA is SHA-256(attestation key || QE auth data); the
//                        attestation key signs header || TD quote body (tee/evidence/tdx_quote.h)
//   AMD SEV-SNP report   VCEK (P-384, with AMD's productName, hwID and SPL extensions) <- ASK <- ARK,
//                        both CA signatures RSA-PSS over SHA-384 as AMD's; the VCEK signs the report
//                        (Note [SEV-SNP signature] in tee/evidence/snp_report.h)
//   NVIDIA GPU evidence  an SPDM 1.1 GET_MEASUREMENTS || MEASUREMENTS transcript with opaque data
//                        (driver and VBIOS versions), signed by a P-384 leaf <- device CA <- device root
//                        (Note [SPDM measurement transcript] in tee/evidence/spdm.h)
//
// A directory made by make_roots holds the roots (the file names of tee/evidence/bundled_roots.h),
// the intermediates, every private key (PEM, unencrypted: test keys) and one CRL per intermediate
// revoking the serial that Variant::Revoked leaves carry. tt_test_vendor (main.cpp) is the same as a
// command; README.md beside this file documents it.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_evidence.h"

namespace tt::tee::evidence::test_vendor {

// Which leaf certificate signs: a current one, one its CA's CRL revokes, or one past its notAfter.
enum class Variant { Good, Revoked, Expired };

// The CRLs make_roots writes, each signed by the intermediate that issues the leaves.
inline constexpr const char* kIntelPckCrl = "intel_pck_ca.crl.pem";
inline constexpr const char* kAmdAskCrl = "amd_ask.crl.pem";
inline constexpr const char* kNvidiaDeviceCrl = "nvidia_device_ca.crl.pem";

// The QE identity's and the TCB info's issuer chain (TCB signing certificate, SGX root), as Intel sends
// it beside the JSON.
inline constexpr const char* kIntelQeIdentityChain = "intel_qe_identity_chain.pem";

// Makes the roots, intermediates, keys and CRLs in `dir` (created; existing files replaced).
void make_roots(const std::filesystem::path& dir);

inline constexpr std::uint64_t kTdDebug = 1;                  // TDATTRIBUTES bit 0
inline constexpr std::uint64_t kSnpPolicyDebug = 1ULL << 19;  // POLICY bit 19
inline constexpr std::uint64_t kSnpPolicyDefault = 0x30000;   // SMT allowed, reserved bit 17 set

struct TdxSpec {
  std::array<std::uint8_t, 64> report_data{};
  std::array<std::uint8_t, 48> mrtd{};
  std::array<std::array<std::uint8_t, 48>, 4> rtmr{};
  std::uint64_t td_attributes = 0;
  std::array<std::uint8_t, 16> tee_tcb_svn{};    // byte 1: the TDX module's major version, byte 0 its ISVSVN
  std::array<std::uint8_t, 48> mrsigner_seam{};  // the TDX module's signer (zero: Intel's own modules)
  Variant variant = Variant::Good;
};
// A TDX v4 quote (header || body || signature data), as configfs-tsm's outblob holds it.
std::vector<std::uint8_t> issue_tdx_quote(const std::filesystem::path& dir, const TdxSpec& spec);

// Intel's QE identity (tee/evidence/tdx_collateral.h) for the test vendor's quoting enclave, signed by
// the test TCB signing key: current for `next_update_s` seconds (negative: expired), its one TCB level
// (the QE's ISVSVN) of `status`.
struct QeIdentitySpec {
  long next_update_s = 30L * 86400L;
  std::string status = "UpToDate";
};
std::string issue_qe_identity(const std::filesystem::path& dir, const QeIdentitySpec& spec);

// The platform every test PCK certificate describes in its SGX extensions (tee/evidence/tdx_tcb_info.h):
// this FMSPC, every SGX TCB component kTestPckSvn, PCESVN kTestPckPceSvn.
inline constexpr std::array<std::uint8_t, 6> kTestFmspc = {0x7e, 0x57, 0x00, 0x00, 0x00, 0x00};
inline constexpr std::uint8_t kTestPckSvn = 3;
inline constexpr std::uint16_t kTestPckPceSvn = 11;

// Intel's TDX TCB info for `fmspc`, signed by the test TCB signing key (its issuer chain is the QE
// identity's), current for `next_update_s` seconds: one TCB level of `status` whose SGX components and
// PCESVN are the test PCK certificate's and whose TDX components are `tdx_svn`; `tdxModule` with
// `module_mrsigner`, attributes 0 under a full mask; and, when `module_identities`, the identities
// TDX_01 and TDX_02 (Note [TDX module identity]) with the same signer, each one TCB level (ISVSVN 0)
// of `module_status`.
struct TcbInfoSpec {
  long next_update_s = 30L * 86400L;
  std::string status = "UpToDate";
  std::array<std::uint8_t, 16> tdx_svn{};
  std::array<std::uint8_t, 6> fmspc = kTestFmspc;
  std::array<std::uint8_t, 48> module_mrsigner{};  // the test quote's MRSIGNERSEAM by default
  bool module_identities = true;
  std::string module_status = "UpToDate";
};
std::string issue_tcb_info(const std::filesystem::path& dir, const TcbInfoSpec& spec);

struct SnpSpec {
  std::array<std::uint8_t, 64> report_data{};
  std::array<std::uint8_t, 48> measurement{};
  std::uint64_t policy = kSnpPolicyDefault;
  std::array<std::uint8_t, 8> reported_tcb{};  // TCB_VERSION bytes; the VCEK is issued for it
  std::array<std::uint8_t, 64> chip_id{};      // the VCEK's hwID
  Variant variant = Variant::Good;
};
struct SnpEvidence {
  std::vector<std::uint8_t> report;  // 1184 bytes
  std::string vcek_pem;              // the VCEK alone (the ASK is among the test roots)
};
SnpEvidence issue_snp_report(const std::filesystem::path& dir, const SnpSpec& spec);

struct GpuSpec {
  SpdmNonce nonce{};
  std::string driver_version = "550.90.07";
  std::array<std::uint8_t, 8> vbios_version = {0x00, 0x9e, 0x00, 0x96, 0x01, 0, 0, 0};  // 96.00.9e.00.01
  std::vector<std::array<std::uint8_t, 48>> measurements = std::vector<std::array<std::uint8_t, 48>>(4);
  Variant variant = Variant::Good;
};
// One GPU's evidence as the attestation SDK serializes it (write_sdk_evidence_json).
SdkEvidenceEntry issue_gpu_evidence(const std::filesystem::path& dir, const GpuSpec& spec);

// NVIDIA's two RIMs for a GPU of `spec` (tee/evidence/rim.h): the VBIOS's golden values for the first
// half of its measurements, the driver's for the rest (Note [RIM index]), each an XML-DSig enveloped
// ECDSA P-384 signature by the test RIM signer, its chain in KeyInfo, as NVIDIA signs them.
struct GpuRims {
  std::string driver;  // the driver's SWID tag
  std::string vbios;
};
GpuRims issue_gpu_rims(const std::filesystem::path& dir, const GpuSpec& spec);

// The RIM root's revocation lists (the RIM signer's issuer), as NVIDIA publishes one for each CA of its
// RIM signing chain (tee/evidence/rim.h: RimCrls), written into `out`: current and revoking nothing,
// current and revoking the RIM signer, and revoking nothing but past its nextUpdate (yesterday).
inline constexpr const char* kRimCrlEmpty = "nvidia_rim_root.crl.pem";
inline constexpr const char* kRimCrlRevoking = "nvidia_rim_root.revoking.crl.pem";
inline constexpr const char* kRimCrlExpired = "nvidia_rim_root.expired.crl.pem";
void write_rim_crls(const std::filesystem::path& dir, const std::filesystem::path& out);

}  // namespace tt::tee::evidence::test_vendor
