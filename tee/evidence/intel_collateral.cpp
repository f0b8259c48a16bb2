#include "tee/evidence/intel_collateral.h"

#include <ctime>

#include "base/error.h"
#include "tee/evidence/crl_currency.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

// Intel's collateral files are a few KiB.
constexpr std::size_t kMaxCollateralBytes = 1 << 20;

std::string read_text(const std::string& path, const char* flag) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, flag, kMaxCollateralBytes);
  return {bytes.begin(), bytes.end()};
}

}  // namespace

IntelCollateral load_intel_collateral(const IntelCollateralFiles& f) {
  IntelCollateral c;
  c.stale = f.stale;
  if (f.qe_identity.empty() && f.tcb_info.empty()) return c;
  if (f.collateral_chain.empty())
    throw InputError(
        "--qe-identity and --tcb-info need --collateral-chain PEM (the issuer chain Intel sends beside "
        "them)");
  c.chain = certificates_from_pem(read_text(f.collateral_chain, "--collateral-chain"), "--collateral-chain");
  if (!f.qe_identity.empty())
    c.qe_identity =
        parse_qe_identity(read_text(f.qe_identity, "--qe-identity"), printable_path(f.qe_identity));
  if (!f.tcb_info.empty())
    c.tcb_info = parse_tcb_info(read_text(f.tcb_info, "--tcb-info"), printable_path(f.tcb_info));
  return c;
}

std::vector<CheckOutcome> IntelCollateral::check(const TdxQuote& quote, const Certificate& intel_root,
                                                 std::optional<std::int64_t> at,
                                                 TcbStatus lowest_accepted) const {
  std::vector<CheckOutcome> out;
  if (qe_identity) out = verify_qe_identity(*qe_identity, chain, quote, intel_root, at, stale);
  if (tcb_info) {
    const std::vector<CheckOutcome> more =
        verify_tcb_info(*tcb_info, chain, quote, intel_root, at, stale, lowest_accepted);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::string IntelCollateral::unchecked_and_expired(std::optional<std::int64_t> at) const {
  std::string out;
  if (!qe_identity) out += "QE identity NOT checked (no --qe-identity)";
  if (!tcb_info) out += (out.empty() ? "" : "; ") + std::string("TCB status NOT checked (no --tcb-info)");
  const std::int64_t now = at.value_or(static_cast<std::int64_t>(std::time(nullptr)));
  std::string expired;
  for (const SignedCollateral* c :
       {qe_identity ? &qe_identity->signed_part : nullptr, tcb_info ? &tcb_info->signed_part : nullptr})
    if (c != nullptr && now > c->next_update_unix)
      expired +=
          (expired.empty() ? "" : ", ") + c->kind + " " + c->source + " (nextUpdate " + c->next_update + ")";
  if (!expired.empty()) out += (out.empty() ? "" : "; ") + expired_collateral_accepted(expired);
  return out;
}

}  // namespace tt::tee::evidence
