#include "tee/evidence/report_data.h"

#include <string>

namespace tt::tee::evidence {

CheckOutcome check_report_data(ByteView signed_data, const std::optional<ReportData>& challenge,
                               const char* field) {
  if (!challenge)
    return {Check::Nonce, true, "freshness NOT checked (give --nonce with the challenge you issued)"};
  if (!equal_ct(*challenge, signed_data))
    return {Check::Nonce, false,
            std::string(field) + " " + to_hex(signed_data) + " is not this verifier's challenge (replayed?)"};
  return {Check::Nonce, true, std::string(field) + " carries this verifier's challenge (fresh)"};
}

}  // namespace tt::tee::evidence
