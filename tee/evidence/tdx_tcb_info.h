// Intel's TCB info for TDX (Intel PCS v4 `tdx/certification/v4/tcb?fmspc=...`), read offline from a file
// the operator fetched, with the issuer chain Intel sends beside it (the TCB-Info-Issuer-Chain header,
// saved as PEM: TCB signing certificate, then Intel's SGX root; the same chain as the QE identity's):
//
//   {"tcbInfo": {"id": "TDX", "version": 3, "issueDate", "nextUpdate", "fmspc": HEX12, "pceId",
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
// byte 1, the TDX module's major version, is not 0: those two bytes are the module's identity, which
// Intel's `tdxModuleIdentities` describe and which is NOT checked here). The FMSPC the TCB info is for
// must be the one in the PCK certificate.
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

struct TcbInfo {
  SignedCollateral signed_part;
  std::array<std::uint8_t, 6> fmspc{};
  std::vector<TcbLevel> levels;  // the file's order
};

// Throws InputError naming the file and the field that is missing or malformed (an SGX TCB info, id
// "SGX", is refused: it has no TDX components).
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

// Check::Collateral (the TCB info's chain, signature and nextUpdate), then Check::TcbStatus: the FMSPCs
// agree, a level matches, and its status is `lowest_accepted` or better (Revoked never).
std::vector<CheckOutcome> verify_tcb_info(const TcbInfo& info, const std::vector<Certificate>& issuer_chain,
                                          const TdxQuote& quote, const Certificate& intel_root,
                                          std::optional<std::int64_t> at_unix_time, StaleCollateral stale,
                                          TcbStatus lowest_accepted);

}  // namespace tt::tee::evidence
