// Real NVIDIA evidence (tests/fixtures/evidence/): every sample verifies with its nonce against the
// bundled root, and is refused by the check that should refuse it with another nonce, one flipped
// byte of the signature or of a measurement, or its chain cut short; the SPDM and opaque fields read
// as NVIDIA's tools print them; the bundled roots are NVIDIA's.
#include <gtest/gtest.h>

#include "tee/digest.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/nvidia_verify.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

using test::all_samples;

EvidenceTrust trust_for(const SpdmNonce& nonce) {
  return {nvidia_device_root(), {}, nonce, std::nullopt, StaleCrl::Refuse};
}

// The first failed check, or nullopt.
std::optional<Check> refused_by(const GpuEvidence& gpu, const EvidenceTrust& trust) {
  for (const CheckOutcome& c : verify_gpu_evidence(gpu, trust))
    if (!c.ok) return c.check;
  return std::nullopt;
}

// The evidence re-parsed after `edit` changed its report bytes (as an attacker would, before signing).
GpuEvidence with_report(const GpuEvidence& gpu, std::size_t offset, std::uint8_t xor_mask) {
  GpuEvidence out = gpu;
  out.report[offset] ^= xor_mask;
  out.transcript = parse_measurement_transcript(out.report, kHopperSignatureBytes);
  return out;
}

TEST(NvidiaEvidence, BundledRootsAreNvidias) {
  EXPECT_EQ(to_hex(sha256(nvidia_device_root().der())),
            "102bf659d5419614c9d8e6aecebc80454eb26b1df6a769ac720b9a690b167b48");
  EXPECT_EQ(to_hex(sha256(nvidia_rim_root().der())),
            "12977b5115acb0381179279fffeb5a8c4d264971ebb32298023a465fa41df5d1");
  EXPECT_EQ(nvidia_device_root().subject(), "O=NVIDIA,CN=NVIDIA Device Identity CA");
}

TEST(NvidiaEvidence, SdkSampleParsesAsSpdm11) {
  const auto gpus = parse_sdk_evidence_json(test::fixture("hopper_evidence.json"), "f");
  ASSERT_EQ(gpus.size(), 1u);
  const GpuEvidence& g = gpus[0];
  EXPECT_EQ(g.chain.size(), 5u);
  EXPECT_EQ(g.transcript.request.version, 0x11);
  EXPECT_EQ(g.transcript.request.operation, 0xff);
  EXPECT_EQ(to_hex(g.transcript.request.nonce), test::kSdkNonce);
  ASSERT_EQ(g.transcript.response.blocks.size(), 64u);
  EXPECT_EQ(g.transcript.response.blocks[1].index, 2);
  EXPECT_EQ(to_hex(g.transcript.response.blocks[1].value).substr(0, 16), "f21c16b08086efe5");
  EXPECT_EQ(g.transcript.signed_bytes.size(), g.report.size() - 96);
  EXPECT_EQ(driver_version(g.opaque), "590.12");
  EXPECT_EQ(vbios_version(g.opaque), "96.00.a5.00.01");
  EXPECT_TRUE(nvdec0_disabled(g.opaque));
  EXPECT_EQ(dmtf_value_type_text(g.transcript.response.blocks[0].value_type), "digest of mutable firmware");
  const std::string text = describe(g);
  EXPECT_NE(text.find("PROJECT                  = \"G520\""), std::string::npos) << text;
  EXPECT_NE(text.find("[ 64] digest of mutable firmware, 48 bytes"), std::string::npos);
}

TEST(NvidiaEvidence, LocalVerifierSampleReadsItsVersions) {
  const GpuEvidence g = parse_report_pair(test::fixture("hopperAttestationReport.txt"),
                                          test::fixture("hopperCertChain.txt"), "local");
  EXPECT_EQ(driver_version(g.opaque), "550.90.07");
  EXPECT_EQ(vbios_version(g.opaque), "96.00.9f.00.01");
  EXPECT_FALSE(g.stated_nonce.has_value());
}

TEST(NvidiaEvidence, EverySampleVerifiesWithItsNonce) {
  const auto samples = all_samples();
  ASSERT_EQ(samples.size(), 6u);
  for (const auto& s : samples) {
    const auto checks = verify_gpu_evidence(s.gpu, trust_for(s.nonce));
    ASSERT_EQ(checks.size(), 3u);
    for (const CheckOutcome& c : checks)
      EXPECT_TRUE(c.ok) << s.gpu.source << ": " << check_name(c.check) << ": " << c.detail;
  }
}

TEST(NvidiaEvidence, AnotherNonceIsRefusedByTheNonceCheck) {
  for (const auto& s : all_samples()) {
    SpdmNonce other = s.nonce;
    other[31] ^= 1;
    EXPECT_EQ(refused_by(s.gpu, trust_for(other)), Check::Nonce) << s.gpu.source;
  }
}

TEST(NvidiaEvidence, AFlippedSignatureOrMeasurementByteIsRefusedByTheSignatureCheck) {
  for (const auto& s : all_samples()) {
    const std::size_t n = s.gpu.report.size();
    EXPECT_EQ(refused_by(with_report(s.gpu, n - 1, 0x01), trust_for(s.nonce)), Check::Signature)
        << s.gpu.source;
    EXPECT_EQ(refused_by(with_report(s.gpu, n - 60, 0x80), trust_for(s.nonce)), Check::Signature)
        << s.gpu.source;
    // Block 2's value starts 37 (request) + 8 (response header) + 55 (block 1) + 7 (block 2 header) in.
    const GpuEvidence flipped = with_report(s.gpu, 37 + 8 + 55 + 7 + 5, 0x01);
    EXPECT_NE(flipped.transcript.response.blocks[1].value, s.gpu.transcript.response.blocks[1].value);
    EXPECT_EQ(refused_by(flipped, trust_for(s.nonce)), Check::Signature) << s.gpu.source;
  }
}

TEST(NvidiaEvidence, AChainCutShortIsRefusedByTheChainCheck) {
  for (const auto& s : all_samples()) {
    for (std::size_t keep : {1u, 2u, 3u}) {
      GpuEvidence cut = s.gpu;
      cut.chain.erase(cut.chain.begin() + static_cast<std::ptrdiff_t>(keep), cut.chain.end());
      const auto checks = verify_gpu_evidence(cut, trust_for(s.nonce));
      EXPECT_FALSE(checks[0].ok) << s.gpu.source << " cut to " << keep;
      EXPECT_NE(checks[0].detail.find("not issued by the trusted"), std::string::npos) << checks[0].detail;
    }
    GpuEvidence without_root_copy = s.gpu;  // the bundled root, not the chain's copy, anchors it
    without_root_copy.chain.pop_back();
    EXPECT_EQ(refused_by(without_root_copy, trust_for(s.nonce)), std::nullopt);
  }
}

TEST(NvidiaEvidence, AnotherRootRefusesTheChain) {
  const auto samples = all_samples();
  EvidenceTrust trust = trust_for(samples[0].nonce);
  trust.device_root = nvidia_rim_root();
  EXPECT_EQ(refused_by(samples[0].gpu, trust), Check::CertificateChain);
}

TEST(NvidiaEvidence, TheFilesUnsignedNonceMustMatchTheSignedOne) {
  GpuEvidence g = all_samples()[0].gpu;
  (*g.stated_nonce)[0] ^= 1;
  const auto checks = verify_gpu_evidence(g, {nvidia_device_root(), {}, std::nullopt, std::nullopt});
  EXPECT_FALSE(checks[2].ok);
  EXPECT_NE(checks[2].detail.find("differs from the nonce the GPU signed"), std::string::npos);
}

TEST(NvidiaEvidence, WithoutANonceFreshnessIsNotChecked) {
  const auto checks =
      verify_gpu_evidence(all_samples()[0].gpu, {nvidia_device_root(), {}, std::nullopt, std::nullopt});
  EXPECT_TRUE(checks[2].ok);
  EXPECT_NE(checks[2].detail.find("NOT checked"), std::string::npos);
}

}  // namespace
}  // namespace tt::tee::evidence
