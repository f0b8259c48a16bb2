// verify_tdx_quote (tee/evidence/tdx_quote.h): the checks of a TDX v4 quote, in order.
#include <openssl/x509.h>

#include <algorithm>

#include "tee/digest.h"
#include "tee/evidence/ecdsa.h"
#include "tee/evidence/report_data.h"
#include "tee/evidence/tdx_quote.h"

namespace tt::tee::evidence {
namespace {

CheckOutcome check_pck_chain(const TdxQuote& q, const TdxTrust& trust) {
  PathOptions options = sent_chain_options(q.pck_chain, trust.crls, trust.at_unix_time);
  options.stale_crl = trust.stale_crl;
  const ChainVerdict v = verify_certificate_path(trust.intel_root, q.pck_chain.front(), options);
  if (!v) return {Check::CertificateChain, false, v.reason};
  return {Check::CertificateChain, true,
          std::to_string(q.pck_chain.size()) + " certificates lead to " + trust.intel_root.subject() + "; " +
              revocation_text(trust.crls.size(), applicable_crls(trust.crls, trust.intel_root, q.pck_chain))};
}

CheckOutcome check_qe_report(const TdxQuote& q) {
  const bool ok = verify_ecdsa_raw(X509_get0_pubkey(q.pck_chain.front().native()), Curve::P256, q.qe_report,
                                   q.qe_report_signature);
  return {Check::QeReport, ok,
          ok ? "the PCK certificate's key signed the quoting enclave's report"
             : "the QE report's signature does not verify under the PCK key (QE report altered?)"};
}

// The quoting enclave vouches for the attestation key by putting its hash in its own report.
CheckOutcome check_attestation_key(const TdxQuote& q) {
  Sha256 h;
  const Sha256Digest want = h.update(q.attestation_key).update(q.qe_auth_data).finish();
  const ByteView qe_data = ByteView(q.qe_report).subspan(320, 64);
  const bool ok = equal_ct(qe_data.subspan(0, 32), want) &&
                  std::all_of(qe_data.begin() + 32, qe_data.end(), [](std::uint8_t b) { return b == 0; });
  return {Check::AttestationKey, ok,
          ok ? "the QE report's REPORTDATA is SHA-256(attestation key || QE auth data)"
             : "the QE report does not vouch for this attestation key (key replaced?)"};
}

CheckOutcome check_quote_signature(const TdxQuote& q) {
  const PkeyPtr key = p256_public_key(q.attestation_key);
  const bool ok = key && verify_ecdsa_raw(key.get(), Curve::P256, q.signed_bytes, q.signature);
  return {Check::Signature, ok,
          ok ? "ECDSA P-256 over SHA-256 of the header and TD quote body (" +
                   std::to_string(q.signed_bytes.size()) + " bytes), by the attestation key"
             : "the quote's signature does not verify under the attestation key (quote altered?)"};
}

}  // namespace

std::vector<CheckOutcome> verify_tdx_quote(const TdxQuote& q, const TdxTrust& trust) {
  return {check_pck_chain(q, trust), check_qe_report(q), check_attestation_key(q), check_quote_signature(q),
          check_report_data(q.report_data(), trust.report_data, "REPORTDATA")};
}

}  // namespace tt::tee::evidence
