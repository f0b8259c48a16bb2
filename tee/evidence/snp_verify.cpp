// verify_snp_report (tee/evidence/snp_report.h): the checks of an SEV-SNP report, in order.
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "tee/evidence/ecdsa.h"
#include "tee/evidence/snp_report.h"

namespace tt::tee::evidence {
namespace {

constexpr std::size_t kScalarBytes = 48;  // P-384
constexpr std::size_t kScalarField = 72;  // as the report stores r and s (Note [SEV-SNP signature])

// r || s, big-endian, from the report's little-endian fields; nullopt when a value does not fit 48
// bytes (no P-384 signature has one).
std::optional<std::vector<std::uint8_t>> big_endian_signature(const SnpReport& r) {
  std::vector<std::uint8_t> out;
  for (const std::size_t at : {kSnpSignedBytes, kSnpSignedBytes + kScalarField}) {
    const ByteView field = r.field(at, kScalarField);
    if (std::any_of(field.begin() + kScalarBytes, field.end(), [](std::uint8_t b) { return b != 0; }))
      return std::nullopt;
    out.insert(out.end(), std::make_reverse_iterator(field.begin() + kScalarBytes),
               std::make_reverse_iterator(field.begin()));
  }
  return out;
}

std::string signature_algorithm(const Certificate& c) {
  return OBJ_nid2sn(X509_get_signature_nid(c.native()));
}

CheckOutcome check_chain(const std::vector<Certificate>& chain, const SnpTrust& trust) {
  const AmdRoot* root = root_for(trust, chain.front());
  if (root == nullptr)
    return {Check::CertificateChain, false,
            "the VCEK is issued by " + chain.front().issuer() +
                ", the ASK of no bundled family (Milan, Genoa): give its family's ARK with --device-root and "
                "its ASK after the VCEK in --vcek"};
  PathOptions options = sent_chain_options(chain, trust.crls, trust.at_unix_time);
  options.stale_crl = trust.stale_crl;
  if (root->ask) options.intermediates.push_back(*root->ask);
  const ChainVerdict v = verify_certificate_path(root->ark, chain.front(), options);
  if (!v) return {Check::CertificateChain, false, v.reason};
  return {Check::CertificateChain, true,
          "the VCEK (signed " + signature_algorithm(chain.front()) + ") leads through the ASK to " +
              root->ark.subject() + " (" + root->family + "); " +
              revocation_text(trust.crls.size(), applicable_crls(trust, chain))};
}

CheckOutcome check_signature(const SnpReport& r, const Certificate& vcek) {
  if (r.signing_key() != SnpSigningKey::Vcek)
    return {
        Check::Signature, false,
        "the report names another signer than the VCEK (a VLEK, or none: MASK_CHIP_KEY); only VCEK-signed "
        "reports are verified"};
  const std::optional<std::vector<std::uint8_t>> rs = big_endian_signature(r);
  const bool ok = rs && verify_ecdsa_raw(X509_get0_pubkey(vcek.native()), Curve::P384, r.signed_bytes(), *rs);
  return {
      Check::Signature, ok,
      ok ? "ECDSA P-384 over SHA-384 of the report's first " + std::to_string(kSnpSignedBytes) +
               " bytes, by the VCEK"
         : "the report's signature does not verify under the VCEK's P-384 key (report altered, or the VCEK "
           "of another chip?)"};
}

CheckOutcome check_chip_id(const SnpReport& r, const VcekExtensions& ext) {
  const ByteView chip = r.chip_id();
  if (std::all_of(chip.begin(), chip.end(), [](std::uint8_t b) { return b == 0; }))
    return {Check::ChipId, true,
            "CHIP_ID is zero (masked by the platform): not compared; the signature alone ties the report to "
            "the VCEK"};
  if (ext.hwid.empty())
    return {Check::ChipId, false, "the certificate has no hwID extension: not a VCEK (a VLEK?)"};
  if (!equal_ct(ext.hwid, chip))
    return {Check::ChipId, false,
            "CHIP_ID " + to_hex(chip.subspan(0, 16)) + "... is not the VCEK's hwID " +
                to_hex(ByteView(ext.hwid).subspan(0, std::min<std::size_t>(16, ext.hwid.size()))) +
                "...: the VCEK of another chip"};
  return {Check::ChipId, true, "CHIP_ID is the VCEK's hwID: the VCEK of this chip"};
}

CheckOutcome check_tcb(const SnpReport& r, const VcekExtensions& ext) {
  if (!ext.tcb) return {Check::ReportedTcb, false, ext.problem};
  const ByteView reported = r.field(0x180, 8);
  if (!equal_ct(*ext.tcb, reported))
    return {Check::ReportedTcb, false,
            "REPORTED_TCB " + snp_tcb_text(reported) + " is not the VCEK's TCB " + snp_tcb_text(*ext.tcb) +
                ": fetch the VCEK for this report's chip and reported TCB"};
  return {Check::ReportedTcb, true,
          "REPORTED_TCB is the TCB the VCEK was issued for: " + snp_tcb_text(reported)};
}

}  // namespace

const AmdRoot* root_for(const SnpTrust& trust, const Certificate& vcek) {
  for (const AmdRoot& root : trust.roots)
    if (root.ask && X509_check_issued(root.ask->native(), vcek.native()) == X509_V_OK) return &root;
  for (const AmdRoot& root : trust.roots)
    if (!root.ask) return &root;
  return nullptr;
}

std::size_t applicable_crls(const SnpTrust& trust, const std::vector<Certificate>& chain) {
  const AmdRoot* root = chain.empty() ? nullptr : root_for(trust, chain.front());
  if (root == nullptr) return 0;
  std::vector<Certificate> path = chain;
  if (root->ask) path.push_back(*root->ask);
  return applicable_crls(trust.crls, root->ark, path);
}

std::vector<CheckOutcome> verify_snp_report(const SnpReport& r, const std::vector<Certificate>& chain,
                                            const SnpTrust& trust) {
  if (chain.empty()) return {{Check::CertificateChain, false, "no VCEK given"}};
  const VcekExtensions ext = read_vcek_extensions(chain.front());
  return {check_chain(chain, trust), check_signature(r, chain.front()), check_chip_id(r, ext),
          check_tcb(r, ext), check_report_data(r.report_data(), trust.report_data, "REPORT_DATA")};
}

}  // namespace tt::tee::evidence
