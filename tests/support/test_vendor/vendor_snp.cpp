// issue_snp_report (test_vendor.h): an SEV-SNP ATTESTATION_REPORT (version 2) and the VCEK that signs it,
// laid out as tee/evidence/snp_report.h reads them.
#include <openssl/asn1.h>

#include <algorithm>
#include <array>

#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/snp_report.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence::test_vendor {
namespace {

constexpr std::size_t kScalarBytes = 48;  // P-384
constexpr std::size_t kScalarField = 72;  // Note [SEV-SNP signature]

// AMD's VCEK extensions (tee/evidence/snp_vcek.cpp reads them): SPL OIDs in TCB_VERSION byte order.
constexpr std::array<const char*, 8> kSplOids = {
    "1.3.6.1.4.1.3704.1.3.1", "1.3.6.1.4.1.3704.1.3.2", "1.3.6.1.4.1.3704.1.3.4", "1.3.6.1.4.1.3704.1.3.5",
    "1.3.6.1.4.1.3704.1.3.6", "1.3.6.1.4.1.3704.1.3.7", "1.3.6.1.4.1.3704.1.3.3", "1.3.6.1.4.1.3704.1.3.8"};

template <class T, int (*Encode)(const T*, unsigned char**)>
std::vector<std::uint8_t> der_of(const T* value) {
  const int n = Encode(value, nullptr);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(std::max(n, 0)));
  unsigned char* p = out.data();
  Encode(value, &p);
  return out;
}

Cert vcek(const std::filesystem::path& dir, const SnpSpec& spec, const Key& key) {
  const Signer ask = load_signer(dir, kTestAmdAsk);
  CertSpec cert_spec = leaf_spec("teetrain TEST AMD SEV VCEK - not a vendor", spec.variant);
  cert_spec.style = SignStyle::RsaPss;
  Cert cert = make_cert(cert_spec, key.get(), ask.cert.get(), ask.key.get());
  CPtr<ASN1_IA5STRING, ASN1_IA5STRING_free> product(ASN1_IA5STRING_new());
  ASN1_STRING_set(product.get(), "Milan-B0", -1);
  add_raw_extension(cert.get(), "1.3.6.1.4.1.3704.1.2",
                    der_of<ASN1_IA5STRING, i2d_ASN1_IA5STRING>(product.get()));
  add_raw_extension(cert.get(), "1.3.6.1.4.1.3704.1.4", spec.chip_id);
  for (std::size_t i = 0; i < kSplOids.size(); ++i) {
    CPtr<ASN1_INTEGER, ASN1_INTEGER_free> spl(ASN1_INTEGER_new());
    ASN1_INTEGER_set(spl.get(), spec.reported_tcb[i]);
    add_raw_extension(cert.get(), kSplOids[i], der_of<ASN1_INTEGER, i2d_ASN1_INTEGER>(spl.get()));
  }
  sign_cert(cert.get(), ask.key.get(), SignStyle::RsaPss);
  return cert;
}

std::vector<std::uint8_t> unsigned_report(const SnpSpec& spec) {
  std::vector<std::uint8_t> r(kSnpReportBytes, 0);
  set_le(r, 0x00, 2, 4);  // VERSION
  set_le(r, 0x08, spec.policy, 8);
  set_le(r, 0x34, 1, 4);                  // SIGNATURE_ALGO: ECDSA P-384 with SHA-384
  set_bytes(r, 0x38, spec.reported_tcb);  // CURRENT_TCB
  set_le(r, 0x48, 0, 4);                  // signer: the VCEK
  set_bytes(r, 0x50, spec.report_data);
  set_bytes(r, 0x90, spec.measurement);
  set_bytes(r, 0x180, spec.reported_tcb);
  set_bytes(r, 0x1A0, spec.chip_id);
  set_bytes(r, 0x1E0, spec.reported_tcb);  // COMMITTED_TCB
  set_bytes(r, 0x1F0, spec.reported_tcb);  // LAUNCH_TCB
  return r;
}

}  // namespace

SnpEvidence issue_snp_report(const std::filesystem::path& dir, const SnpSpec& spec) {
  const Key key = generate_key(KeyKind::P384);
  const Cert cert = vcek(dir, spec, key);
  std::vector<std::uint8_t> report = unsigned_report(spec);
  const std::vector<std::uint8_t> rs =
      sign_raw(key.get(), ByteView(report).subspan(0, kSnpSignedBytes), kScalarBytes);
  for (std::size_t half = 0; half < 2; ++half)  // big-endian r, s into little-endian 72-byte fields
    std::reverse_copy(rs.begin() + static_cast<std::ptrdiff_t>(half * kScalarBytes),
                      rs.begin() + static_cast<std::ptrdiff_t>((half + 1) * kScalarBytes),
                      report.begin() + static_cast<std::ptrdiff_t>(kSnpSignedBytes + half * kScalarField));
  return {report, pem_of(cert.get())};
}

}  // namespace tt::tee::evidence::test_vendor
