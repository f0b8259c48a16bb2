// SPDM 1.1 measurement transcripts and the verifier on synthetic evidence: a device chain and reports
// made here (P-384 keys, X.509, a CRL) so that every structural refusal and the revocation check can
// be exercised, which NVIDIA's samples alone cannot (nobody outside NVIDIA can sign with its keys).
#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/error.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/openssl_ptr.h"

namespace tt::tee::evidence {
namespace {

using PkeyPtr = tee::CPtr<EVP_PKEY, EVP_PKEY_free>;

PkeyPtr p384_key() {
  PkeyPtr k(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"));
  if (!k) throw std::runtime_error("keygen");
  return k;
}

Certificate make_cert(const std::string& cn, EVP_PKEY* key, const Certificate* issuer, EVP_PKEY* issuer_key,
                      bool ca, long serial) {
  X509Ptr c(X509_new());
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), 3600L * 24 * 365);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(c.get(), issuer != nullptr ? X509_get_subject_name(issuer->native()) : name);
  X509_set_pubkey(c.get(), key);
  X509V3_CTX v3{};
  X509V3_set_ctx(&v3, issuer != nullptr ? issuer->native() : c.get(), c.get(), nullptr, nullptr, 0);
  X509_EXTENSION* bc =
      X509V3_EXT_conf_nid(nullptr, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  X509_add_ext(c.get(), bc, -1);
  X509_EXTENSION_free(bc);
  X509_sign(c.get(), issuer_key, EVP_sha384());
  return Certificate(std::move(c));
}

std::shared_ptr<X509_crl_st> make_crl(const Certificate& issuer, EVP_PKEY* key, long revoked_serial) {
  X509CrlPtr crl(X509_CRL_new());
  X509_CRL_set_version(crl.get(), 1);
  X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(issuer.native()));
  std::unique_ptr<ASN1_TIME, decltype(&ASN1_TIME_free)> now(ASN1_TIME_adj(nullptr, time(nullptr), 0, -60),
                                                            ASN1_TIME_free);
  std::unique_ptr<ASN1_TIME, decltype(&ASN1_TIME_free)> next(ASN1_TIME_adj(nullptr, time(nullptr), 30, 0),
                                                             ASN1_TIME_free);
  X509_CRL_set1_lastUpdate(crl.get(), now.get());
  X509_CRL_set1_nextUpdate(crl.get(), next.get());
  X509_REVOKED* r = X509_REVOKED_new();
  std::unique_ptr<ASN1_INTEGER, decltype(&ASN1_INTEGER_free)> serial(ASN1_INTEGER_new(), ASN1_INTEGER_free);
  ASN1_INTEGER_set(serial.get(), revoked_serial);
  X509_REVOKED_set_serialNumber(r, serial.get());
  X509_REVOKED_set_revocationDate(r, now.get());
  X509_CRL_add0_revoked(crl.get(), r);
  X509_CRL_sort(crl.get());
  X509_CRL_sign(crl.get(), key, EVP_sha384());
  return std::shared_ptr<X509_crl_st>(std::move(crl));
}

// r || s of an ECDSA P-384 signature over SHA-384(data).
std::vector<std::uint8_t> sign_raw(EVP_PKEY* key, ByteView data) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t len = 0;
  EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha384(), nullptr, key);
  EVP_DigestSign(ctx.get(), nullptr, &len, data.data(), data.size());
  std::vector<std::uint8_t> der(len);
  EVP_DigestSign(ctx.get(), der.data(), &len, data.data(), data.size());
  const unsigned char* p = der.data();
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(
      d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(len)), ECDSA_SIG_free);
  std::vector<std::uint8_t> raw(96);
  BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), raw.data(), 48);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), raw.data() + 48, 48);
  return raw;
}

// GET_MEASUREMENTS (nonce 0x11..) || MEASUREMENTS with `blocks` 48-byte digests and `opaque`, unsigned.
std::vector<std::uint8_t> unsigned_report(int blocks, const std::vector<std::uint8_t>& opaque) {
  std::vector<std::uint8_t> r = {0x11, 0xE0, 0x01, 0xFF};
  r.insert(r.end(), 32, 0x11);
  r.push_back(0x00);
  const std::size_t record = static_cast<std::size_t>(blocks) * 55;
  r.insert(r.end(), {0x11, 0x60, 0x00, 0x00, static_cast<std::uint8_t>(blocks),
                     static_cast<std::uint8_t>(record & 0xff), static_cast<std::uint8_t>(record >> 8), 0x00});
  for (int i = 1; i <= blocks; ++i) {
    r.insert(r.end(), {static_cast<std::uint8_t>(i), 0x01, 51, 0x00, 0x01, 48, 0x00});
    r.insert(r.end(), 48, static_cast<std::uint8_t>(i));
  }
  r.insert(r.end(), 32, 0x22);
  r.insert(r.end(), {static_cast<std::uint8_t>(opaque.size()), 0x00});
  r.insert(r.end(), opaque.begin(), opaque.end());
  return r;
}

struct SyntheticDevice {
  PkeyPtr root_key = p384_key(), ca_key = p384_key(), leaf_key = p384_key();
  Certificate root = make_cert("test root", root_key.get(), nullptr, root_key.get(), true, 1);
  Certificate ca = make_cert("test ca", ca_key.get(), &root, root_key.get(), true, 2);
  Certificate leaf = make_cert("test leaf", leaf_key.get(), &ca, ca_key.get(), false, 3);

  GpuEvidence evidence(const std::vector<std::uint8_t>& opaque = {0x03, 0x00, 0x03, 0x00, '1', '.', 0}) {
    GpuEvidence g;
    g.source = "synthetic";
    g.arch = "HOPPER";
    g.chain = {leaf, ca};
    g.report = unsigned_report(3, opaque);
    const std::vector<std::uint8_t> sig = sign_raw(leaf_key.get(), g.report);
    g.report.insert(g.report.end(), sig.begin(), sig.end());
    g.transcript = parse_measurement_transcript(g.report, kHopperSignatureBytes);
    g.opaque = parse_opaque_data(g.transcript.response.opaque);
    return g;
  }
  EvidenceTrust trust() const { return {root, {}, std::nullopt, std::nullopt, StaleCrl::Refuse}; }
};

TEST(Spdm, SyntheticReportParsesAndVerifies) {
  SyntheticDevice dev;
  const GpuEvidence g = dev.evidence();
  ASSERT_EQ(g.transcript.response.blocks.size(), 3u);
  EXPECT_EQ(g.transcript.response.blocks[2].value, std::vector<std::uint8_t>(48, 3));
  EXPECT_EQ(driver_version(g.opaque), "1.");
  for (const CheckOutcome& c : verify_gpu_evidence(g, dev.trust())) EXPECT_TRUE(c.ok) << c.detail;
}

TEST(Spdm, StructuralDamageIsAnInputErrorNamingTheField) {
  const std::vector<std::uint8_t> good = unsigned_report(2, {});
  auto refuses = [](std::vector<std::uint8_t> r, const std::string& field) {
    r.insert(r.end(), 96, 0);
    try {
      parse_measurement_transcript(r, 96);
      ADD_FAILURE() << "accepted; expected " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  auto at = [&](std::size_t i, std::uint8_t v) {
    std::vector<std::uint8_t> r = good;
    r[i] = v;
    return r;
  };
  refuses(at(0, 0x12), "SPDMVersion");
  refuses(at(1, 0xE1), "RequestResponseCode");
  refuses(at(2, 0x00), "does not request a signature");
  refuses(at(37 + 4, 3), "NumberOfBlocks says 3");
  refuses(at(37 + 8, 2), "index 2 twice");
  refuses(at(37 + 9, 0x02), "not the DMTF format");
  refuses(at(37 + 13, 49), "DMTFSpecMeasurementValue");
  refuses(at(37 + 5, 0xff), "truncated at MeasurementRecord");
  std::vector<std::uint8_t> trailing = good;
  trailing.push_back(0);
  EXPECT_THROW(parse_measurement_transcript(trailing, 0), InputError);
  EXPECT_THROW(parse_measurement_transcript({}, 96), InputError);
}

TEST(Spdm, OpaqueDataFieldsAndTheirRendering) {
  const std::vector<std::uint8_t> raw = {0x06, 0x00, 0x08, 0x00, 0x00, 0x74, 0x00, 0x96,
                                         0x01, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x01, 0x00,
                                         0xaa, 0x63, 0x00, 0x02, 0x00, 0x1b, 0x41};
  const auto fields = parse_opaque_data(raw);
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(vbios_version(fields), "96.00.74.00.01");
  EXPECT_EQ(opaque_field_text(fields[1]), "enabled (0xaa)");
  EXPECT_FALSE(nvdec0_disabled(fields));
  EXPECT_EQ(opaque_field_name(99), "UNKNOWN_99");
  EXPECT_EQ(opaque_field_text(fields[2]), "0x1b41");  // never a raw control character
  EXPECT_THROW(parse_opaque_data(std::vector<std::uint8_t>{0x03, 0x00, 0x05, 0x00, 'a'}), InputError);
}

TEST(Spdm, ARevokedDeviceOrIntermediateIsRefusedByTheGivenList) {
  SyntheticDevice dev;
  const GpuEvidence g = dev.evidence();
  EvidenceTrust trust = dev.trust();
  trust.crls.push_back(make_crl(dev.ca, dev.ca_key.get(), 99));  // lists another serial: still ok
  auto checks = verify_gpu_evidence(g, trust);
  EXPECT_TRUE(checks[0].ok) << checks[0].detail;
  EXPECT_NE(checks[0].detail.find("checked against 1 given list"), std::string::npos) << checks[0].detail;
  trust.crls = {make_crl(dev.ca, dev.ca_key.get(), 3)};  // the leaf
  checks = verify_gpu_evidence(g, trust);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_NE(checks[0].detail.find("revoked by the vendor (serial 03)"), std::string::npos)
      << checks[0].detail;
  trust.crls = {make_crl(dev.root, dev.root_key.get(), 2)};  // the intermediate
  checks = verify_gpu_evidence(g, trust);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_NE(checks[0].detail.find("serial 02"), std::string::npos) << checks[0].detail;
  PkeyPtr other_key = p384_key();
  const Certificate other = make_cert("another ca", other_key.get(), nullptr, other_key.get(), true, 7);
  trust.crls = {make_crl(other, other_key.get(), 3)};  // issued by no CA of the chain
  checks = verify_gpu_evidence(g, trust);
  EXPECT_TRUE(checks[0].ok);
  EXPECT_NE(checks[0].detail.find("none of the given lists"), std::string::npos) << checks[0].detail;
}

TEST(Spdm, AKeyThatIsNotP384IsRefusedBySignature) {
  SyntheticDevice dev;
  GpuEvidence g = dev.evidence();
  PkeyPtr p256(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  g.chain[0] = make_cert("p256 leaf", p256.get(), &dev.ca, dev.ca_key.get(), false, 4);
  const auto checks = verify_gpu_evidence(g, dev.trust());
  EXPECT_TRUE(checks[0].ok);
  EXPECT_FALSE(checks[1].ok);
  EXPECT_NE(checks[1].detail.find("not ECDSA P-384"), std::string::npos);
}

}  // namespace
}  // namespace tt::tee::evidence
