// Intel's TCB info for TDX (Intel PCS v4 `tdx/certification/v4/tcb?fmspc=...`), read offline from a file
// the operator fetched, with the issuer chain Intel sends beside it (the TCB-Info-Issuer-Chain header,
// saved as PEM: TCB signing certificate, then Intel's SGX root; the same chain as the QE identity's):
//
//   {"tcbInfo": {"id": "TDX", "version": 3, "issueDate", "nextUpdate", "fmspc": HEX12, "pceId",
//    "tdxModule": {"mrsigner": HEX96, "attributes": HEX16, "attributesMask": HEX16},
//    "tdxModuleIdentities": [{"id": "TDX_01", "mrsigner", "attributes", "attributesMask",   (optional)
//                             "tcbLevels": [{"tcb": {"isvsvn": N}, "tcbDate", "tcbStatus"}, ...]}, ...],
//    "tcbLevels": [{"tcb": {"sgxtcbcomponents": [{"svn": N} x 16], "pcesvn": N,
//                           "tdxtcbcomponents": [{"svn": N} x 16]},
//                   "tcbDate", "tcbStatus"}, ...]},
//    "signature": HEX r || s}
//
// Intel signs the bytes of the "tcbInfo" value exactly as the file holds them (ECDSA P-256 over SHA-256,
// by the TCB signing key; check_signed_collateral). The platform's TCB level is chosen as Intel's quote
// verification library chooses it: the first level, in the file's order (Intel lists them highest
// first), whose 16 SGX TCB components and PCESVN the PCK certificate's SGX extensions reach, each at
// least the level's, and whose 16 TDX TCB components the quote's TEE_TCB_SVN reaches (from byte 2 when
// byte 1, the TDX module's major version, is not 0: Note [TDX module identity]). The FMSPC the TCB info
// is for must be the one in the PCK certificate.
//
// Note [TDX module identity]: the TDX module (the SEAM code that builds and measures every TD) is
// checked as Intel's quote verification library checks it (QuoteVerifier.cpp, TdxModuleCheck.cpp).
// TEE_TCB_SVN byte 1 is the module's major version and byte 0 its ISVSVN. The expected signer and
// attributes are `tdxModule`'s, or, when byte 1 is not 0, those of the `tdxModuleIdentities` entry
// "TDX_<byte 1 in two hex digits>"; the quote's MRSIGNERSEAM must equal that signer and its
// SEAMATTRIBUTES that entry's attributes under its attributesMask (Intel's library today also insists
// they are zero, which every module Intel ships has). The module's TCB level is the entry's first level
// (the file's order, highest first) whose isvsvn byte 0 reaches; its status is combined with the
// platform's (combine_with_module): a Revoked module is Revoked, an OutOfDate one makes the platform
// OutOfDate (OutOfDateConfigurationNeeded where the platform needs configuration). A TCB info without
// `tdxModuleIdentities` (older collateral) is checked against `tdxModule` alone, and the verdict says the
// module's TCB level was NOT checked.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/evidence/tdx_collateral.h"

namespace tt::tee::evidence {

// Intel's TCB statuses, best first; the order is what a policy's lowest accepted status compares.
enum class TcbStatus {
  UpToDate,
  SWHardeningNeeded,
  ConfigurationNeeded,
  ConfigurationAndSWHardeningNeeded,
  OutOfDate,
  OutOfDateConfigurationNeeded,
  Revoked,
};
// Intel's spelling ("UpToDate", ...).
const char* tcb_status_name(TcbStatus status);
// The status named `name` (Intel's spelling, case-sensitive); nullopt when there is none.
std::optional<TcbStatus> tcb_status_of(std::string_view name);
// The lowest status accepted when the verifier's policy names none: OutOfDate and below are refused.
inline constexpr TcbStatus kDefaultLowestTcbStatus = TcbStatus::ConfigurationAndSWHardeningNeeded;

inline constexpr std::size_t kTcbComponents = 16;
using TcbComponents = std::array<std::uint8_t, kTcbComponents>;

struct TcbLevel {
  TcbComponents sgx{};  // sgxtcbcomponents[i].svn
  std::uint16_t pcesvn = 0;
  TcbComponents tdx{};   // tdxtcbcomponents[i].svn
  std::string tcb_date;  // "2023-02-15T00:00:00Z"
  TcbStatus status = TcbStatus::Revoked;
};

// One TCB level of a TDX module identity: reached when the module's ISVSVN is at least `isvsvn`.
struct TdxModuleTcbLevel {
  std::uint8_t isvsvn = 0;
  std::string tcb_date;
  TcbStatus status = TcbStatus::Revoked;
};

// `tdxModule` (id "tdxModule", no levels) or one of `tdxModuleIdentities` (Note [TDX module identity]).
struct TdxModuleIdentity {
  std::string id;                           // "TDX_01", upper case as Intel's library compares it
  std::array<std::uint8_t, 48> mrsigner{};  // the module signer's MRSIGNERSEAM
  std::array<std::uint8_t, 8> attributes{};
  std::array<std::uint8_t, 8> attributes_mask{};
  std::vector<TdxModuleTcbLevel> levels;  // the file's order
};

struct TcbInfo {
  SignedCollateral signed_part;
  std::array<std::uint8_t, 6> fmspc{};
  std::vector<TcbLevel> levels;  // the file's order
  TdxModuleIdentity tdx_module;
  std::optional<std::vector<TdxModuleIdentity>> module_identities;  // nullopt: the file has none
};

// Throws InputError naming the file and the field that is missing or malformed (an SGX TCB info, id
// "SGX", is refused: it has no TDX components nor `tdxModule`).
TcbInfo parse_tcb_info(std::string_view json, const std::string& where);

// What a PCK certificate's SGX extensions (OID 1.2.840.113741.1.13.1) say about the platform.
struct PckTcb {
  std::array<std::uint8_t, 6> fmspc{};  // 1.2.840.113741.1.13.1.4
  TcbComponents sgx{};                  // 1.2.840.113741.1.13.1.2.1 .. .16
  std::uint16_t pcesvn = 0;             // 1.2.840.113741.1.13.1.2.17
};
// Throws IntegrityError when the certificate has no SGX extensions or they are malformed (the PCK chain
// verified, so Intel issued it as it is).
PckTcb read_pck_tcb(const Certificate& pck_leaf);

// The matched level (see the top of this file); nullptr when the platform is below every level.
const TcbLevel* select_tcb_level(const TcbInfo& info, const PckTcb& pck, ByteView tee_tcb_svn);

// Reads the "tcbInfo" object's `tdxModule` (required) and `tdxModuleIdentities` (optional) into `info`;
// InputError naming the field (tdx_module.cpp).
void read_tdx_modules(const nlohmann::json& body, const std::string& what, TcbInfo& info);

// The quote's TDX module against the TCB info (Note [TDX module identity]): the outcome (Check::TdxModule),
// the module's TCB status where its level was found, and what the verdict says of it.
struct TdxModuleMatch {
  CheckOutcome outcome;
  std::optional<TcbStatus> status;  // nullopt: no module TCB level (major version 0, or not in the file)
  std::string said;  // "TDX_01's signer and attributes, ISVSVN 3 at TCB level of DATE: UpToDate", or
                     // what was not checked
};
TdxModuleMatch check_tdx_module(const TcbInfo& info, const TdxQuote& quote);

// Intel's combination of the platform's TCB status with its TDX module's (Note [TDX module identity]).
TcbStatus combine_with_module(TcbStatus platform, TcbStatus module);

// Check::Collateral (the TCB info's chain, signature and nextUpdate), Check::TdxModule (Note [TDX module
// identity]), then Check::TcbStatus: the FMSPCs agree, a level matches, and its status combined with
// the module's is `lowest_accepted` or better (Revoked never).
std::vector<CheckOutcome> verify_tcb_info(const TcbInfo& info, const std::vector<Certificate>& issuer_chain,
                                          const TdxQuote& quote, const Certificate& intel_root,
                                          std::optional<std::int64_t> at_unix_time, StaleCollateral stale,
                                          TcbStatus lowest_accepted);

}  // namespace tt::tee::evidence
