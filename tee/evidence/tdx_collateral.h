// Intel's QE identity for TDX quotes (Intel PCS v4 `tdx/certification/v4/qe/identity`), read offline
// from a file the operator fetched, with the issuer chain Intel sends beside it (the
// SGX-Enclave-Identity-Issuer-Chain header, saved as PEM: TCB signing certificate, then Intel's SGX root):
//
//   {"enclaveIdentity": {"id": "TD_QE", "version": 2, "issueDate", "nextUpdate", "miscselect",
//    "miscselectMask", "attributes", "attributesMask", "mrsigner", "isvprodid",
//    "tcbLevels": [{"tcb": {"isvsvn": N}, "tcbStatus": "UpToDate" | "OutOfDate" | "Revoked", ...}]},
//    "signature": HEX r || s}
//
// Intel signs the bytes of the "enclaveIdentity" value exactly as the file holds them (ECDSA P-256 over
// SHA-256, by the TCB signing key). The checks: collateral (the issuer chain leads to the trusted Intel
// root, the signature verifies, nextUpdate has not passed unless the verifier accepts stale collateral
// explicitly, which the outcome then says); QE identity (the quote's QE report has the identity's
// MRSIGNER and ISVPRODID, MISCSELECT and ATTRIBUTES under their masks, and an ISVSVN whose TCB level is
// UpToDate). Intel's TCB info (the platform's TCB status by FMSPC) is not read.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tee/evidence/tdx_quote.h"

namespace tt::tee::evidence {

struct QeIdentity {
  std::string source;
  std::string signed_text;              // the "enclaveIdentity" value as in the file: what Intel signed
  std::vector<std::uint8_t> signature;  // 64: r || s
  std::string id;
  std::string next_update;  // "2026-12-06T08:50:32Z"
  std::int64_t next_update_unix = 0;
  std::vector<std::uint8_t> miscselect, miscselect_mask, attributes, attributes_mask, mrsigner;
  std::uint16_t isvprodid = 0;
  std::vector<std::pair<std::uint16_t, std::string>> tcb_levels;  // ISVSVN, status; highest first
};

// Throws InputError naming the file and the field that is missing or malformed.
QeIdentity parse_qe_identity(std::string_view json, const std::string& where);

// Whether collateral past its nextUpdate is used.
enum class StaleCollateral { Refuse, Accept };

// Collateral, then QE identity (Check values Collateral, QeIdentity), each with its outcome.
std::vector<CheckOutcome> verify_qe_identity(const QeIdentity& identity,
                                             const std::vector<Certificate>& issuer_chain,
                                             const TdxQuote& quote, const Certificate& intel_root,
                                             std::optional<std::int64_t> at_unix_time, StaleCollateral stale);

}  // namespace tt::tee::evidence
