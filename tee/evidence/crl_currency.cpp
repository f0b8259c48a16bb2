#include "tee/evidence/crl_currency.h"

#include <openssl/x509.h>

#include <ctime>

#include "tee/identity/x509.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {

std::optional<CheckOutcome> expired_crl(const std::vector<std::string>& paths,
                                        const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                                        std::optional<std::int64_t> at) {
  const std::time_t when = static_cast<std::time_t>(at.value_or(std::time(nullptr)));
  for (std::size_t i = 0; i < crls.size() && i < paths.size(); ++i) {
    const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crls[i].get());
    const std::string list = "the revocation list '" + printable_path(paths[i]) + "'";
    if (next == nullptr)
      return CheckOutcome{Check::Collateral, false, list + " has no nextUpdate, so it never goes stale"};
    if (ASN1_TIME_cmp_time_t(next, when) < 0)
      return CheckOutcome{Check::Collateral, false,
                          list + " expired at its nextUpdate " +
                              read_crl_facts(crls[i].get(), paths[i]).next_update +
                              ": it may miss later revocations; fetch a current one"};
  }
  return std::nullopt;
}

}  // namespace tt::tee::evidence
