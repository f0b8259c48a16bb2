// Intel TDX quotes, version 4 (Intel's "TDX DCAP Quoting Library API", quote format v4), read and
// verified offline against Intel's SGX root CA (bundled, tee/evidence/roots/):
//
//   header (48)       version 4 | attestation key type 2 (ECDSA P-256) | TEE type 0x81 (TDX) |
//                     reserved | QE vendor id (16) | user data (20)
//   TD quote body (584) TEE_TCB_SVN, MRSEAM, MRSIGNERSEAM, SEAM attributes, TD attributes, XFAM, MRTD,
//                     MRCONFIGID, MROWNER, MROWNERCONFIG, RTMR0..3, REPORTDATA (64)
//   signature data length (4, LE), then: quote signature (64: r || s over SHA-256 of header || body,
//                     by the attestation key) | attestation key (64: P-256 x || y) | certification data
//                     type 6 (QE report): QE report (384) | QE report signature (64, by the PCK key) |
//                     QE auth data (2 + n) | certification data type 5: the PCK chain (PEM: PCK leaf,
//                     PCK platform or processor CA, Intel SGX root CA)
//
// The checks: the PCK chain leads to Intel's root; the PCK key signed the QE report; the QE report's
// REPORTDATA is SHA-256(attestation key || QE auth data) followed by 32 zero bytes (so the quoting
// enclave vouches for the attestation key); the attestation key signed header and body; and the TD's
// REPORTDATA carries the verifier's challenge. Not checked here: the QE identity (Intel's signed
// collateral, checked by tdx_collateral.h when the verifier has it) and the TCB status (Intel's TCB info,
// checked by tdx_tcb_info.h when the verifier has it).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_verify.h"
#include "tee/identity/x509.h"

namespace tt::tee::evidence {

inline constexpr std::size_t kTdxHeaderBytes = 48;
inline constexpr std::size_t kTdxBodyBytes = 584;
inline constexpr std::size_t kTdxReportDataBytes = 64;

struct TdxQuote {
  std::string source;
  std::uint16_t version = 0;
  std::uint16_t attestation_key_type = 0;
  std::uint32_t tee_type = 0;
  std::vector<std::uint8_t> signed_bytes;         // header || TD quote body
  std::vector<std::uint8_t> signature;            // 64: r || s
  std::vector<std::uint8_t> attestation_key;      // 64: x || y
  std::vector<std::uint8_t> qe_report;            // 384: an SGX report of the quoting enclave
  std::vector<std::uint8_t> qe_report_signature;  // 64, by the PCK key
  std::vector<std::uint8_t> qe_auth_data;
  std::vector<Certificate> pck_chain;  // PCK leaf first
  std::size_t trailing_bytes = 0;      // after the quote: not part of it, ignored

  ByteView body() const { return ByteView(signed_bytes).subspan(kTdxHeaderBytes); }
  ByteView report_data() const { return body().subspan(kTdxBodyBytes - kTdxReportDataBytes); }
};

// Whether `bytes` start like a TDX v4 quote (version 4, TEE type 0x81).
bool looks_like_tdx_quote(ByteView bytes);
// Throws InputError naming the field that is malformed.
TdxQuote parse_tdx_quote(ByteView bytes, const std::string& where);

struct TdxTrust {
  Certificate intel_root;
  std::vector<std::shared_ptr<X509_crl_st>> crls;
  std::optional<std::array<std::uint8_t, kTdxReportDataBytes>> report_data;  // nullopt: not checked
  std::optional<std::int64_t> at_unix_time;
  // Accept (--allow-expired-collateral): a revocation list past its nextUpdate still revokes; the
  // verifier reports it (tee/evidence/crl_currency.h).
  StaleCrl stale_crl = StaleCrl::Refuse;
};

// PCK chain, QE report signature, QE binding of the attestation key, quote signature, report data;
// each with its outcome (Check values: CertificateChain, QeReport, AttestationKey, Signature, Nonce).
std::vector<CheckOutcome> verify_tdx_quote(const TdxQuote& quote, const TdxTrust& trust);

// Every field: header, TD body (MRTD, RTMRs, REPORTDATA, ...), the QE report's identity, the chain.
std::string describe(const TdxQuote& quote);

}  // namespace tt::tee::evidence
