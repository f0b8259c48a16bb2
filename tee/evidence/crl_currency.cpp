#include "tee/evidence/crl_currency.h"

#include <openssl/x509.h>

#include <ctime>

#include "tee/identity/x509.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {

namespace {

// The nextUpdate of `crl` when it has passed at `when` ("none" without one); nullopt when current.
std::optional<std::string> stale_next_update(X509_crl_st* crl, const std::string& path, std::time_t when) {
  const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crl);
  if (next == nullptr) return "none";
  if (ASN1_TIME_cmp_time_t(next, when) < 0) return read_crl_facts(crl, path).next_update;
  return std::nullopt;
}

std::time_t time_of(std::optional<std::int64_t> at) {
  return static_cast<std::time_t>(at.value_or(std::time(nullptr)));
}

}  // namespace

std::optional<CheckOutcome> expired_crl(const std::vector<std::string>& paths,
                                        const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                                        std::optional<std::int64_t> at) {
  for (std::size_t i = 0; i < crls.size() && i < paths.size(); ++i) {
    const std::optional<std::string> next = stale_next_update(crls[i].get(), paths[i], time_of(at));
    if (!next) continue;
    const std::string list = "the revocation list '" + printable_path(paths[i]) + "'";
    if (*next == "none")
      return CheckOutcome{Check::Collateral, false, list + " has no nextUpdate, so it never goes stale"};
    return CheckOutcome{Check::Collateral, false,
                        list + " expired at its nextUpdate " + *next +
                            ": it may miss later revocations; fetch a current one"};
  }
  return std::nullopt;
}

std::string expired_crls_accepted(const std::vector<std::string>& paths,
                                  const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                                  std::optional<std::int64_t> at) {
  std::string out;
  for (std::size_t i = 0; i < crls.size() && i < paths.size(); ++i)
    if (const std::optional<std::string> next = stale_next_update(crls[i].get(), paths[i], time_of(at)))
      out += (out.empty() ? "" : ", ") + std::string("revocation list '") + printable_path(paths[i]) +
             "' (nextUpdate " + *next + ")";
  return out;
}

std::string expired_collateral_accepted(const std::string& what) {
  return what.empty() ? "" : "EXPIRED collateral accepted (--allow-expired-collateral): " + what;
}

}  // namespace tt::tee::evidence
