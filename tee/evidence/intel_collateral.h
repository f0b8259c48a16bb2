// Intel's collateral for TDX quotes as a verifier holds it: the QE identity (tdx_collateral.h) and the
// TCB info (tdx_tcb_info.h), each optional, read once from the files the operator fetched, under the
// issuer chain Intel sends beside them. `verify-evidence` and the training handshake's verifier
// (engine/keys/real_attestation.h) both check quotes with it, so they cannot disagree, and both say
// what it did not check.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/tdx_collateral.h"
#include "tee/evidence/tdx_tcb_info.h"

namespace tt::tee::evidence {

struct IntelCollateralFiles {
  std::string qe_identity;       // empty: the QE identity is not checked
  std::string tcb_info;          // empty: the TCB status is not checked
  std::string collateral_chain;  // needed by either
  StaleCollateral stale = StaleCollateral::Refuse;
};

struct IntelCollateral {
  std::optional<QeIdentity> qe_identity;
  std::optional<TcbInfo> tcb_info;
  std::vector<Certificate> chain;
  StaleCollateral stale = StaleCollateral::Refuse;

  // The checks of what is given (Collateral and QeIdentity, Collateral and TcbStatus), in that order;
  // none when nothing is. `at`: the time to check against (now when unset).
  std::vector<CheckOutcome> check(const TdxQuote& quote, const Certificate& intel_root,
                                  std::optional<std::int64_t> at, TcbStatus lowest_accepted) const;
  // What a verdict says of it: what was not given ("QE identity NOT checked (no --qe-identity)", "TCB
  // status NOT checked (no --tcb-info)"), and each file past its nextUpdate that was accepted anyway
  // ("EXPIRED collateral accepted (--allow-expired-collateral): TCB info FILE (nextUpdate ...)").
  std::string unchecked_and_expired(std::optional<std::int64_t> at) const;
};

// Reads the files; InputError naming the flag and the file when one cannot be read or parsed, or when
// the chain is missing.
IntelCollateral load_intel_collateral(const IntelCollateralFiles& files);

}  // namespace tt::tee::evidence
