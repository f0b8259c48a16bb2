// AMD SEV-SNP attestation reports (the real Milan report + VCEK pairs of tests/fixtures/evidence/): both
// verify against the bundled ARK-Milan with their REPORT_DATA, and each damage is refused by the check
// that should refuse it: a MEASUREMENT or REPORT_DATA byte and a signature byte (signature), the other
// chip's VCEK (signature, chip id, reported TCB), a Turin VCEK, the Genoa root, a path without the ASK
// (certificate chain), another REPORT_DATA (nonce). AMD's RSA-PSS certificates are checked by OpenSSL's
// path verification. Malformed reports are InputErrors; the fuzz test is in test_evidence_fuzz.cpp.
#include <gtest/gtest.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include "base/error.h"
#include "tee/digest.h"
#include "tee/evidence/snp_report.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

constexpr std::int64_t kJan2025 = 1735689600;  // every sample VCEK valid (the first expires 2029-09-24)

struct SnpSample {
  std::string name;
  SnpReport report;
  std::vector<Certificate> vcek;
};

ByteView view(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::vector<Certificate> vcek(const char* name) {
  return {Certificate::from_der(view(test::fixture(name)))};
}

std::vector<SnpSample> samples() {
  return {{test::kSnpGsgReport, parse_snp_report(view(test::fixture(test::kSnpGsgReport)), "gsg"),
           vcek(test::kSnpGsgVcek)},
          {test::kSnpVirteeReport, parse_snp_report(view(test::fixture(test::kSnpVirteeReport)), "virtee"),
           vcek(test::kSnpVirteeVcek)}};
}

ReportData own_report_data(const SnpReport& r) {
  ReportData d{};
  std::copy(r.report_data().begin(), r.report_data().end(), d.begin());
  return d;
}

SnpTrust trust(std::optional<ReportData> rd, std::vector<AmdRoot> roots = amd_roots()) {
  return {std::move(roots), {}, rd, kJan2025, StaleCrl::Refuse};
}

// The first check that refuses, and every failed one.
std::optional<Check> refused_by(const SnpReport& r, const std::vector<Certificate>& chain,
                                const SnpTrust& t) {
  for (const CheckOutcome& c : verify_snp_report(r, chain, t))
    if (!c.ok) return c.check;
  return std::nullopt;
}

TEST(SnpReport, BundledAmdRootsArePinned) {
  const std::vector<AmdRoot> roots = amd_roots();
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(to_hex(sha256(roots[0].ark.der())),
            "69d063b45344d26a2e94e1f4210de49ef555308287d4c174445c95639a540bcd");
  EXPECT_EQ(to_hex(sha256(roots[0].ask->der())),
            "67d303bd3905fd38db8b20e0793699870e7fa612eaad5dec358293fd8c0bac1b");
  EXPECT_EQ(to_hex(sha256(roots[1].ark.der())),
            "4c6598d19c18719c5dfd4a7d335f674e5bfe1d8f800cea2cf270c10d103db2f1");
  EXPECT_EQ(to_hex(sha256(roots[1].ask->der())),
            "5464738c1546aed5f2cecf1dc98c5c960a92e8913238a61711bc90ec6e828521");
}

// AMD signs with RSASSA-PSS (SHA-384): OpenSSL's path check must verify it, and refuse a damaged one.
TEST(SnpReport, AmdRsaPssChainsVerify) {
  const std::vector<AmdRoot> roots = amd_roots();
  for (const AmdRoot& r : roots) {
    EXPECT_EQ(X509_get_signature_nid(r.ark.native()), NID_rsassaPss) << r.family;
    EXPECT_EQ(X509_get_signature_nid(r.ask->native()), NID_rsassaPss) << r.family;
    EXPECT_TRUE(verify_certificate_path(r.ark, *r.ask, PathOptions{}).ok) << r.family;
    std::vector<std::uint8_t> der = r.ask->der();
    der[der.size() - 10] ^= 1;  // inside the signature value
    EXPECT_FALSE(verify_certificate_path(r.ark, Certificate::from_der(der), PathOptions{}).ok) << r.family;
  }
  EXPECT_FALSE(
      verify_certificate_path(roots[1].ark, *roots[0].ask, PathOptions{}).ok);  // Milan ASK, Genoa ARK
  EXPECT_EQ(X509_get_signature_nid(vcek(test::kSnpVirteeVcek).front().native()), NID_rsassaPss);
}

TEST(SnpReport, SamplesParse) {
  const std::vector<SnpSample> s = samples();
  EXPECT_EQ(s[1].report.version(), 2u);
  EXPECT_EQ(to_hex(s[1].report.measurement()).substr(0, 16), "7a1e5c266c0108db");
  EXPECT_EQ(to_hex(s[1].report.chip_id()).substr(0, 16), "d49554ec717f4e5b");
  EXPECT_EQ(s[1].report.signing_key(), SnpSigningKey::Vcek);
  EXPECT_FALSE(s[1].report.debug_allowed());
  EXPECT_TRUE(s[0].report.debug_allowed());  // go-sev-guest's sample: policy 0xb0000
  const std::string text = describe(s[0].report);
  EXPECT_NE(text.find("MEASUREMENT         b07af9620f3b839b"), std::string::npos) << text;
  EXPECT_NE(text.find("POLICY              0x00000000000b0000: ABI 0.0 or later; SMT allowed, DEBUG ALLOWED"),
            std::string::npos);
  EXPECT_NE(text.find("REPORTED_TCB        boot loader 2, TEE 0, SNP 5, microcode 68"), std::string::npos);
  EXPECT_NE(text.find("CURRENT firmware    1.49 build 3"), std::string::npos);
  EXPECT_EQ(text.find("CPUID"), std::string::npos);  // version 3 on
  const VcekExtensions ext = read_vcek_extensions(s[1].vcek.front());
  EXPECT_EQ(ext.product, "Milan-B0");
  ASSERT_TRUE(ext.tcb);
  EXPECT_EQ(to_hex(*ext.tcb), "0300000000000873");
  EXPECT_EQ(to_hex(ext.hwid), to_hex(s[1].report.chip_id()));
  EXPECT_NE(describe_vcek(s[1].vcek).find("VCEK product        Milan-B0"), std::string::npos);
}

TEST(SnpReport, SamplesVerifyWithTheirReportData) {
  for (const SnpSample& s : samples()) {
    const auto checks = verify_snp_report(s.report, s.vcek, trust(own_report_data(s.report)));
    ASSERT_EQ(checks.size(), 5u);
    for (const CheckOutcome& c : checks)
      EXPECT_TRUE(c.ok) << s.name << ": " << check_name(c.check) << ": " << c.detail;
    EXPECT_EQ(root_for(trust(std::nullopt), s.vcek.front())->family, "Milan");
  }
}

TEST(SnpReport, EachDamageIsRefusedByItsCheck) {
  const std::vector<SnpSample> all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const SnpSample& s = all[i];
    const ReportData rd = own_report_data(s.report);
    ReportData other = rd;
    other[63] ^= 1;
    EXPECT_EQ(refused_by(s.report, s.vcek, trust(other)), Check::Nonce) << s.name;
    for (const std::size_t at :
         {std::size_t{0x90}, std::size_t{0x50}, std::size_t{0x2A0}, std::size_t{0x2E8 + 47}}) {
      SnpReport r = s.report;  // MEASUREMENT, REPORT_DATA, r, the top byte of s
      r.bytes[at] ^= 1;
      EXPECT_EQ(refused_by(r, s.vcek, trust(std::nullopt)), Check::Signature) << s.name << " byte " << at;
    }
    SnpReport r = s.report;
    r.bytes[0x2A0 + 60] = 1;  // r beyond 48 bytes: no P-384 scalar
    EXPECT_EQ(refused_by(r, s.vcek, trust(std::nullopt)), Check::Signature) << s.name;
    r = s.report;
    r.bytes[0x48] = 1 << 2;  // SIGNING_KEY = VLEK
    EXPECT_EQ(refused_by(r, s.vcek, trust(std::nullopt)), Check::Signature) << s.name;
    // The other chip's VCEK: its key, hwID and TCB all differ.
    const auto checks = verify_snp_report(s.report, all[1 - i].vcek, trust(rd));
    EXPECT_TRUE(checks[0].ok);
    EXPECT_FALSE(checks[1].ok);
    EXPECT_EQ(checks[2].check, Check::ChipId);
    EXPECT_FALSE(checks[2].ok);
    EXPECT_NE(checks[2].detail.find("the VCEK of another chip"), std::string::npos);
    EXPECT_FALSE(checks[3].ok);
    EXPECT_TRUE(checks[4].ok);
  }
}

TEST(SnpReport, ChainsThatDoNotLeadToTheRootAreRefused) {
  const SnpSample s = samples()[1];
  const std::vector<AmdRoot> roots = amd_roots();
  // A Turin VCEK: a family not bundled.
  const auto turin = verify_snp_report(s.report, vcek(test::kSnpTurinVcek), trust(std::nullopt));
  EXPECT_FALSE(turin[0].ok);
  EXPECT_NE(turin[0].detail.find("CN=SEV-Turin"), std::string::npos) << turin[0].detail;
  EXPECT_EQ(refused_by(s.report, s.vcek, trust(std::nullopt, {roots[1]})), Check::CertificateChain);  // Genoa
  // A root given without its ASK: the chain must bring the ASK, or it is cut.
  const AmdRoot milan_alone{"--device-root", roots[0].ark, std::nullopt};
  EXPECT_EQ(refused_by(s.report, s.vcek, trust(std::nullopt, {milan_alone})), Check::CertificateChain);
  const std::vector<Certificate> with_ask = {s.vcek.front(), *roots[0].ask};
  EXPECT_EQ(refused_by(s.report, with_ask, trust(std::nullopt, {milan_alone})), std::nullopt);
  // An ARK given alone never counts as the ASK (the VCEK must not chain straight to a root).
  const std::vector<Certificate> with_ark = {s.vcek.front(), roots[0].ark};
  EXPECT_EQ(refused_by(s.report, with_ark, trust(std::nullopt, {milan_alone})), Check::CertificateChain);
}

TEST(SnpReport, MaskedChipIdIsNotComparedButStillSigned) {
  SnpSample s = samples()[1];
  std::fill(s.report.bytes.begin() + 0x1A0, s.report.bytes.begin() + 0x1E0, 0);
  const auto checks = verify_snp_report(s.report, s.vcek, trust(std::nullopt));
  EXPECT_FALSE(checks[1].ok);  // CHIP_ID is signed
  EXPECT_TRUE(checks[2].ok);
  EXPECT_NE(checks[2].detail.find("not compared"), std::string::npos);
}

TEST(SnpReport, MalformedReportsAreInputErrors) {
  const std::string good = test::fixture(test::kSnpVirteeReport);
  auto parse = [](const std::string& s) { return parse_snp_report(view(s), "r"); };
  auto damaged = [&](std::size_t at, char v) {
    std::string s = good;
    s[at] = v;
    return s;
  };
  EXPECT_THROW(parse(good.substr(0, 100)), InputError);
  try {
    parse(good.substr(0, 0x95));
    ADD_FAILURE() << "a report cut inside MEASUREMENT parsed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated at MEASUREMENT"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse(damaged(0, 1)), InputError);                    // VERSION 1
  EXPECT_THROW(parse(damaged(0x34, 2)), InputError);                 // SIGNATURE_ALGO
  EXPECT_THROW(parse(damaged(kSnpReportBytes - 1, 1)), InputError);  // signature padding
  EXPECT_THROW(parse(good + "x"), InputError);
  EXPECT_TRUE(looks_like_snp_report(view(good)));
  EXPECT_FALSE(looks_like_snp_report(view(good + "x")));
  EXPECT_FALSE(looks_like_snp_report(view(test::fixture(test::kTdxSpr))));
  EXPECT_THROW(load_vcek(std::string(test::kDir) + "hopper_evidence.json"), InputError);
  EXPECT_EQ(load_vcek(std::string(test::kDir) + test::kSnpGsgVcek).size(), 1u);
}

}  // namespace
}  // namespace tt::tee::evidence
