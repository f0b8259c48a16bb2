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
// UpToDate). Intel's TCB info (the platform's TCB status by FMSPC) is tdx_tcb_info.h, signed and checked
// for expiry the same way (SignedCollateral, check_signed_collateral).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/untrusted_json.h"
#include "tee/evidence/tdx_quote.h"

namespace tt::tee::evidence {

// What Intel's signed collateral files share (QE identity, TCB info): the signed object's exact text,
// Intel's signature over it, and when the object stops being current.
struct SignedCollateral {
  std::string kind;                     // "QE identity", "TCB info": for messages
  std::string source;                   // the file, for messages
  std::string signed_text;              // the signed object's value as in the file: what Intel signed
  std::vector<std::uint8_t> signature;  // 64: r || s
  std::string next_update;              // "2026-12-06T08:50:32Z"
  std::int64_t next_update_unix = 0;
};

// The value of `key` in `json` (already parsed as `doc`), the top-level "signature" and the object's
// "nextUpdate". Throws InputError naming the file and the field.
SignedCollateral read_signed_collateral(std::string_view json, const nlohmann::json& doc, const char* key,
                                        const std::string& kind, const std::string& where);
// `bytes` bytes of hex in field `key` of `o` (either case); throws InputError naming `what`.
std::vector<std::uint8_t> collateral_hex_field(const nlohmann::json& o, const char* key, std::size_t bytes,
                                               const std::string& what);

// Whether collateral past its nextUpdate is used.
enum class StaleCollateral { Refuse, Accept };

// Check::Collateral: the issuer chain leads to `root`, the signature verifies, and nextUpdate has not
// passed at `at` (now when unset) unless `stale` accepts it, which the outcome then says ("EXPIRED").
CheckOutcome check_signed_collateral(const SignedCollateral& c, const std::vector<Certificate>& chain,
                                     const Certificate& root, std::optional<std::int64_t> at,
                                     StaleCollateral stale);

struct QeIdentity {
  SignedCollateral signed_part;
  std::string id;
  std::vector<std::uint8_t> miscselect, miscselect_mask, attributes, attributes_mask, mrsigner;
  std::uint16_t isvprodid = 0;
  std::vector<std::pair<std::uint16_t, std::string>> tcb_levels;  // ISVSVN, status; highest first
};

// Throws InputError naming the file and the field that is missing or malformed.
QeIdentity parse_qe_identity(std::string_view json, const std::string& where);

// Collateral, then QE identity (Check values Collateral, QeIdentity), each with its outcome.
std::vector<CheckOutcome> verify_qe_identity(const QeIdentity& identity,
                                             const std::vector<Certificate>& issuer_chain,
                                             const TdxQuote& quote, const Certificate& intel_root,
                                             std::optional<std::int64_t> at_unix_time, StaleCollateral stale);

}  // namespace tt::tee::evidence
