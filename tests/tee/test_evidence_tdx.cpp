// Intel TDX v4 quotes (go-tdx-guest's samples in tests/fixtures/evidence/): both verify against the
// bundled Intel SGX root with their REPORTDATA, and each damage is refused by the check that should
// refuse it: a body byte (quote signature), the QE report (its signature), the attestation key (the
// QE's binding), the PCK chain cut short (chain), another REPORTDATA (nonce). Malformed quotes are
// InputErrors; the fuzz test is in test_evidence_fuzz.cpp.
#include <gtest/gtest.h>

#include "base/error.h"
#include "tee/digest.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/tdx_quote.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

using ReportData = std::array<std::uint8_t, kTdxReportDataBytes>;

struct TdxSample {
  std::string name;
  std::string bytes;
};

std::vector<TdxSample> samples() {
  return {{test::kTdxSpr, test::fixture(test::kTdxSpr)}, {test::kTdxCos, test::fixture(test::kTdxCos)}};
}

TdxQuote parse(const std::string& bytes) {
  return parse_tdx_quote(ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "q");
}

ReportData own_report_data(const TdxQuote& q) {
  ReportData r{};
  std::copy(q.report_data().begin(), q.report_data().end(), r.begin());
  return r;
}

std::optional<Check> refused_by(const TdxQuote& q, const ReportData& rd) {
  for (const CheckOutcome& c : verify_tdx_quote(q, {intel_sgx_root(), {}, rd, std::nullopt}))
    if (!c.ok) return c.check;
  return std::nullopt;
}

TEST(TdxQuote, BundledRootIsIntels) {
  EXPECT_EQ(to_hex(sha256(intel_sgx_root().der())),
            "44a0196b2b99f889b8e149e95b807a350e7424964399e885a7cbb8ccfab674d3");
}

TEST(TdxQuote, SamplesParse) {
  const TdxQuote q = parse(test::fixture(test::kTdxSpr));
  EXPECT_EQ(q.version, 4);
  EXPECT_EQ(q.tee_type, 0x81u);
  EXPECT_EQ(q.signed_bytes.size(), 632u);
  EXPECT_EQ(q.pck_chain.size(), 3u);
  EXPECT_EQ(q.trailing_bytes, 39u);  // go-tdx-guest appended text after this sample's quote
  EXPECT_EQ(to_hex(q.report_data()).substr(0, 16), "6c62dec1b8191749");
  const std::string text = describe(q);
  EXPECT_NE(text.find("MRTD                6363b8043668a3ad"), std::string::npos) << text;
  EXPECT_NE(text.find("RTMR3"), std::string::npos);
  EXPECT_NE(text.find("CN=Intel SGX PCK Certificate"), std::string::npos);
}

TEST(TdxQuote, SamplesVerifyWithTheirReportData) {
  for (const auto& s : samples()) {
    const TdxQuote q = parse(s.bytes);
    const auto checks = verify_tdx_quote(q, {intel_sgx_root(), {}, own_report_data(q), std::nullopt});
    ASSERT_EQ(checks.size(), 5u);
    for (const CheckOutcome& c : checks)
      EXPECT_TRUE(c.ok) << s.name << ": " << check_name(c.check) << ": " << c.detail;
  }
}

TEST(TdxQuote, EachDamageIsRefusedByItsCheck) {
  for (const auto& s : samples()) {
    const TdxQuote good = parse(s.bytes);
    const ReportData rd = own_report_data(good);
    ReportData other = rd;
    other[0] ^= 1;
    EXPECT_EQ(refused_by(good, other), Check::Nonce) << s.name;
    TdxQuote q = good;
    q.signed_bytes[48 + 136] ^= 1;  // MRTD
    EXPECT_EQ(refused_by(q, rd), Check::Signature) << s.name;
    q = good;
    q.signature[5] ^= 1;
    EXPECT_EQ(refused_by(q, rd), Check::Signature) << s.name;
    q = good;
    q.qe_report[64] ^= 1;  // the QE's MRENCLAVE
    EXPECT_EQ(refused_by(q, rd), Check::QeReport) << s.name;
    q = good;
    q.attestation_key[63] ^= 1;
    EXPECT_EQ(refused_by(q, rd), Check::AttestationKey) << s.name;
    q = good;
    q.pck_chain.erase(q.pck_chain.begin() + 1, q.pck_chain.end());
    EXPECT_EQ(refused_by(q, rd), Check::CertificateChain) << s.name;
  }
}

TEST(TdxQuote, TheNvidiaRootRefusesThePckChain) {
  const TdxQuote q = parse(test::fixture(test::kTdxSpr));
  const auto checks = verify_tdx_quote(q, {nvidia_device_root(), {}, std::nullopt, std::nullopt});
  EXPECT_FALSE(checks[0].ok);
  EXPECT_TRUE(checks[4].ok);
  EXPECT_NE(checks[4].detail.find("NOT checked"), std::string::npos);
}

TEST(TdxQuote, MalformedQuotesAreInputErrors) {
  const std::string good = test::fixture(test::kTdxSpr);
  auto damaged = [&](std::size_t at, char v) {
    std::string s = good;
    s[at] = v;
    return s;
  };
  EXPECT_THROW(parse(good.substr(0, 100)), InputError);
  EXPECT_THROW(parse(damaged(0, 5)), InputError);              // version 5
  EXPECT_THROW(parse(damaged(2, 3)), InputError);              // attestation key type
  EXPECT_THROW(parse(damaged(632 + 3, 1)), InputError);        // signature data length past the end
  EXPECT_THROW(parse(damaged(632 + 4 + 128, 5)), InputError);  // certification data type
  EXPECT_FALSE(looks_like_tdx_quote(ByteView(reinterpret_cast<const std::uint8_t*>("[{}]"), 4)));
}

}  // namespace
}  // namespace tt::tee::evidence
