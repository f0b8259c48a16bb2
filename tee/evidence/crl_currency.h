// Whether the revocation lists a verifier was given are current. A list past its nextUpdate may miss
// later revocations; the chain checks (sent_chain_options) refuse it too, but in OpenSSL's words ("CRL
// has expired"), without saying which file to fetch again. verify-evidence (--crl) and the training
// handshake (--evidence-crl) check this first, so the refusal names the file and its nextUpdate.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_verify.h"

namespace tt::tee::evidence {

// Check::Collateral, failed, for the first of `crls` (read from `paths`, in the same order) whose
// nextUpdate has passed at `at` (now when unset), or that has none; nullopt when every list is current.
std::optional<CheckOutcome> expired_crl(const std::vector<std::string>& paths,
                                        const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                                        std::optional<std::int64_t> at);

// Every one of `crls` that expired_crl would refuse, as "revocation list 'FILE' (nextUpdate ...)",
// comma-separated; empty when all are current. What a verifier that accepts them
// (--allow-expired-collateral) reports instead of refusing, in expired_collateral_accepted's words.
std::string expired_crls_accepted(const std::vector<std::string>& paths,
                                  const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                                  std::optional<std::int64_t> at);

// Note [Expired collateral wording]: every report of collateral accepted past its nextUpdate (revocation
// lists, Intel's QE identity and TCB info) says it in these words, "EXPIRED collateral accepted
// (--allow-expired-collateral): " followed by `what` (each file and its nextUpdate), whether
// verify-evidence's verdict, a run's banner or its summary says it; empty when `what` is.
std::string expired_collateral_accepted(const std::string& what);

}  // namespace tt::tee::evidence
