// NVIDIA's reference integrity manifests: the sample RIMs parse, their XML signatures verify against
// the bundled RIM root while their signing certificates were valid (and are refused as expired now,
// or when one golden value or the signature is altered); the golden-value comparison passes on a RIM's
// own values and names the block that differs. No public RIM matches the sample evidence
// (tests/fixtures/evidence/README.md), so this comparison is tested on the RIM's values.
#include <gtest/gtest.h>

#include "base/error.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/rim.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

Rim sample_rim(const char* name = test::kVbiosRim) {
  return parse_rim(test::fixture(name), name);
}

// The RIM's own active golden values, as a GPU that matches it would measure them (first alternative).
std::map<int, std::vector<std::uint8_t>> runtime_of(const Rim& rim) {
  std::map<int, std::vector<std::uint8_t>> out;
  for (const GoldenMeasurement& g : rim.measurements)
    if (g.active) out[g.index] = g.alternatives.front();
  return out;
}

// `xml` with the first occurrence of `from` replaced by `to`.
std::string edited(std::string xml, const std::string& from, const std::string& to) {
  const std::size_t at = xml.find(from);
  if (at == std::string::npos) throw std::runtime_error("edit: not found");
  return xml.replace(at, from.size(), to);
}

TEST(Rim, SampleParses) {
  const Rim rim = sample_rim();
  EXPECT_EQ(rim.version, "96.00.74.00.01");
  EXPECT_TRUE(rim.is_vbios());
  EXPECT_EQ(rim.product, "GH100");
  EXPECT_EQ(rim.signer_chain.size(), 4u);
  ASSERT_FALSE(rim.measurements.empty());
  EXPECT_EQ(rim.measurements[1].index, 1);
  EXPECT_EQ(rim.measurements[1].size, 48u);
  EXPECT_EQ(to_hex(rim.measurements[1].alternatives[0]).substr(0, 16), "b558fdac9af53b91");
  Rim driver = rim;
  driver.version = "550.90.07";
  EXPECT_FALSE(driver.is_vbios());
}

TEST(Rim, SignatureVerifiesWhileItsCertificatesWereValid) {
  for (const char* name : {test::kVbiosRim, test::kOtherVbiosRim}) {
    const ChainVerdict v = verify_rim_signature(sample_rim(name), nvidia_rim_root(), test::kRimsValid);
    EXPECT_TRUE(v.ok) << name << ": " << v.reason;
  }
}

TEST(Rim, ExpiredSigningCertificateIsRefusedToday) {
  const ChainVerdict v = verify_rim_signature(sample_rim(), nvidia_rim_root(), std::nullopt);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("validity period"), std::string::npos) << v.reason;
}

TEST(Rim, AnotherRootRefusesTheSigner) {
  const ChainVerdict v = verify_rim_signature(sample_rim(), nvidia_device_root(), test::kRimsValid);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("RIM signing certificate not issued"), std::string::npos) << v.reason;
}

TEST(Rim, AnAlteredGoldenValueBreaksTheXmlSignature) {
  const std::string xml = test::fixture(test::kVbiosRim);
  const Rim altered = parse_rim(edited(xml, "b558fdac9af53b91", "b558fdac9af53b92"), "altered");
  EXPECT_EQ(to_hex(altered.measurements[1].alternatives[0]).substr(0, 16), "b558fdac9af53b92");
  const ChainVerdict v = verify_rim_signature(altered, nvidia_rim_root(), test::kRimsValid);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("does not verify"), std::string::npos) << v.reason;
  // An added measurement, outside any existing attribute, is covered by the signature too.
  const Rim added =
      parse_rim(edited(xml, "</ns0:Payload>", "<ns0:Resource type=\"Other\"/></ns0:Payload>"), "added");
  EXPECT_FALSE(verify_rim_signature(added, nvidia_rim_root(), test::kRimsValid).ok);
}

TEST(Rim, ASignatureThatCoversLessThanTheDocumentIsRefused) {
  const std::string xml =
      edited(test::fixture(test::kVbiosRim), "<ds:Reference URI=\"\">", "<ds:Reference URI=\"#x\">");
  const ChainVerdict v = verify_rim_signature(parse_rim(xml, "partial"), nvidia_rim_root(), test::kRimsValid);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("whole document"), std::string::npos) << v.reason;
}

TEST(Rim, GoldenValuesMatchTheirOwnMeasurementsAndAChangeIsNamed) {
  const Rim rim = sample_rim();
  auto runtime = runtime_of(rim);
  GoldenComparison ok = compare_golden({rim}, runtime, {});
  EXPECT_TRUE(ok.mismatches.empty());
  EXPECT_EQ(ok.compared, runtime.size());
  runtime[1][0] ^= 1;  // RIM index 1 = SPDM block 2
  GoldenComparison bad = compare_golden({rim}, runtime, {});
  ASSERT_EQ(bad.mismatches.size(), 1u);
  EXPECT_EQ(bad.mismatches[0].index, 1);
  EXPECT_EQ(bad.mismatches[0].actual, runtime[1]);
  EXPECT_TRUE(
      compare_golden({rim}, runtime, {1}).mismatches.empty());  // skipped, as NVDEC0-disabled index 35
  runtime.erase(2);
  EXPECT_EQ(compare_golden({rim}, runtime, {}).mismatches.size(), 2u);  // a missing block differs too
}

TEST(Rim, AnyAlternativeMatches) {
  Rim rim = sample_rim();
  auto runtime = runtime_of(rim);
  GoldenMeasurement& g = rim.measurements[1];
  g.alternatives.insert(g.alternatives.begin(), std::vector<std::uint8_t>(48, 0xee));
  EXPECT_TRUE(compare_golden({rim}, runtime, {}).mismatches.empty());
}

TEST(Rim, TwoRimsClaimingOneIndexAreAConfigurationError) {
  const Rim rim = sample_rim();
  EXPECT_THROW(compare_golden({rim, rim}, runtime_of(rim), {}), InputError);
}

TEST(Rim, AgainstTheSampleEvidenceTheVersionAndTheDifferingBlocksAreNamed) {
  const auto gpus = parse_sdk_evidence_json(test::fixture("hopper_evidence.json"), "f");
  GoldenComparison cmp;
  const auto checks = check_against_rims(gpus[0], {sample_rim()}, cmp);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_NE(checks[0].detail.find("is for VBIOS 96.00.74.00.01, this GPU reports VBIOS 96.00.a5.00.01"),
            std::string::npos)
      << checks[0].detail;
  EXPECT_FALSE(checks[1].ok);
  EXPECT_NE(checks[1].detail.find("block(s) 2, 3, 4, 10, 12, 13"), std::string::npos) << checks[1].detail;
}

TEST(Rim, MalformedRimsAreInputErrors) {
  const std::string xml = test::fixture(test::kVbiosRim);
  EXPECT_THROW(parse_rim("<a/>", "x"), InputError);
  EXPECT_THROW(parse_rim("not xml", "x"), InputError);
  EXPECT_THROW(parse_rim("<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", "x"), InputError);
  EXPECT_THROW(parse_rim(edited(xml, "alternatives=\"1\"", "alternatives=\"2\""), "x"), InputError);
  EXPECT_THROW(parse_rim(edited(xml, "index=\"1\"", "index=\"0\""), "x"), InputError);
  EXPECT_THROW(parse_rim(edited(xml, "size=\"48\"", "size=\"47\""), "x"), InputError);
}

}  // namespace
}  // namespace tt::tee::evidence
