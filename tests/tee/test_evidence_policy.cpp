// The verifier's policy of real measurements (tee/evidence/evidence_policy.h, Note [Evidence policy]), on
// the test vendor's evidence: a policy written from a quote passes it; a quote off policy in several
// fields fails EVERY one of them, by name; debug is refused unless allowed; minimum TCBs compare each
// component; the file reads back to the same digest whatever its comments, order or hex case; bad lines
// are InputErrors naming the line. The parser's fuzz test is in test_evidence_fuzz.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "tee/evidence/evidence_policy.h"
#include "tests/support/test_vendor/test_vendor.h"

namespace tt::tee::evidence {
namespace {

namespace tv = test_vendor;

class EvidencePolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("tt_policy_vendor_" + std::to_string(::getpid()));
    tv::make_roots(dir_);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::filesystem::path dir_;
};
std::filesystem::path EvidencePolicyTest::dir_;

std::vector<std::string> failed_fields(const std::vector<PolicyFailure>& failures) {
  std::vector<std::string> out;
  for (const PolicyFailure& f : failures) out.emplace_back(policy_field_name(f.field));
  return out;
}

VerifiedMeasurements tdx(const std::filesystem::path& dir, const tv::TdxSpec& spec) {
  return measurements_of(parse_tdx_quote(tv::issue_tdx_quote(dir, spec), "quote"));
}

TEST_F(EvidencePolicyTest, TdxEveryFailingFieldIsNamed) {
  tv::TdxSpec good;
  good.mrtd.fill(0x11);
  good.rtmr[1].fill(0x22);
  good.tee_tcb_svn = {3, 1, 2};
  EvidencePolicy policy;
  add_to_policy(policy, tdx(dir_, good));
  EXPECT_TRUE(check_policy(policy, tdx(dir_, good)).empty());
  EXPECT_EQ(policy.allowed.at(PolicyField::TdxDebug), std::vector<std::string>{"refuse"});

  tv::TdxSpec bad = good;
  bad.mrtd.fill(0x12);
  bad.rtmr[1].fill(0x23);
  bad.td_attributes = tv::kTdDebug;
  bad.tee_tcb_svn = {3, 0, 2};
  EXPECT_EQ(failed_fields(check_policy(policy, tdx(dir_, bad))),
            (std::vector<std::string>{"tdx.mrtd", "tdx.rtmr1", "tdx.debug", "tdx.min_tee_tcb_svn"}));
  const std::vector<PolicyFailure> failures = check_policy(policy, tdx(dir_, bad));
  EXPECT_NE(failures.back().detail.find("byte 1 is 0 < 1"), std::string::npos) << failures.back().detail;

  tv::TdxSpec newer = good;  // a higher TCB passes the minimum
  newer.tee_tcb_svn = {4, 1, 3};
  EXPECT_TRUE(check_policy(policy, tdx(dir_, newer)).empty());
  policy.allowed[PolicyField::TdxDebug] = {"allow"};
  tv::TdxSpec debug = good;
  debug.td_attributes = tv::kTdDebug;
  EXPECT_TRUE(check_policy(policy, tdx(dir_, debug)).empty());
}

TEST_F(EvidencePolicyTest, DebugIsRefusedEvenByAnEmptyPolicy) {
  tv::SnpSpec spec;
  spec.policy = tv::kSnpPolicyDefault | tv::kSnpPolicyDebug;
  const VerifiedMeasurements m =
      measurements_of(parse_snp_report(tv::issue_snp_report(dir_, spec).report, "r"));
  EXPECT_EQ(failed_fields(check_policy(EvidencePolicy{}, m)), std::vector<std::string>{"snp.debug"});
  EXPECT_EQ(unconstrained_fields(EvidencePolicy{}, EvidenceKind::Snp),
            (std::vector<std::string>{"snp.measurement", "snp.min_reported_tcb"}));
}

TEST_F(EvidencePolicyTest, SnpMeasurementAndTcb) {
  tv::SnpSpec good;
  good.measurement.fill(0x4D);
  good.reported_tcb = {3, 0, 0, 0, 0, 0, 8, 115};
  EvidencePolicy policy;
  add_to_policy(policy, measurements_of(parse_snp_report(tv::issue_snp_report(dir_, good).report, "r")));
  tv::SnpSpec bad = good;
  bad.measurement.fill(0x4E);
  bad.reported_tcb = {3, 0, 0, 0, 0, 0, 7, 115};
  EXPECT_EQ(failed_fields(check_policy(
                policy, measurements_of(parse_snp_report(tv::issue_snp_report(dir_, bad).report, "r")))),
            (std::vector<std::string>{"snp.measurement", "snp.min_reported_tcb"}));
}

TEST_F(EvidencePolicyTest, GpuVersionsAndRims) {
  tv::GpuSpec spec;
  const GpuEvidence gpu =
      parse_sdk_evidence_json(write_sdk_evidence_json({tv::issue_gpu_evidence(dir_, spec)}), "g").front();
  const EvidencePolicy policy = parse_policy(
      "teetrain-evidence-policy 1\ngpu.driver_version = 535.00\ngpu.driver_version = 550.90.07\n"
      "gpu.vbios_version = 96.00.9E.00.02\ngpu.rim = NV_RIM_DRIVER\n",
      "p");
  EXPECT_EQ(failed_fields(check_policy(policy, measurements_of(gpu, {}))),
            (std::vector<std::string>{"gpu.vbios_version", "gpu.rim"}));
}

TEST_F(EvidencePolicyTest, FileRoundTripAndDigest) {
  const std::string text =
      "# trusted image of 2026-11\nteetrain-evidence-policy 1\n\n"
      "tdx.mrtd = " +
      std::string(96, 'A') + "\ntdx.mrtd = " + std::string(96, '0') + "\n  tdx.debug = refuse  \n";
  const EvidencePolicy policy = parse_policy(text, "p");
  EXPECT_EQ(write_policy(policy), "teetrain-evidence-policy 1\ntdx.mrtd = " + std::string(96, '0') +
                                      "\ntdx.mrtd = " + std::string(96, 'a') + "\ntdx.debug = refuse\n");
  EXPECT_EQ(policy_digest(parse_policy(write_policy(policy), "again")), policy_digest(policy));
  EvidencePolicy other = policy;
  other.allowed[PolicyField::TdxDebug] = {"allow"};
  EXPECT_NE(policy_digest(other), policy_digest(policy));
}

TEST_F(EvidencePolicyTest, BadLinesNameTheLine) {
  const auto message = [](const std::string& text) {
    try {
      (void)parse_policy(text, "p");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("tdx.mrtd = 00\n").find("line 1: expected 'teetrain-evidence-policy 1'"),
            std::string::npos);
  EXPECT_NE(message("teetrain-evidence-policy 1\ntdx.mrdt = 00\n")
                .find("line 2: unknown field 'tdx.mrdt' (did "
                      "you mean tdx.mrtd?)"),
            std::string::npos);
  EXPECT_NE(
      message("teetrain-evidence-policy 1\ntdx.mrtd = 00\n").find("line 2: tdx.mrtd needs 96 hex digits"),
      std::string::npos);
  EXPECT_NE(message("teetrain-evidence-policy 1\nsnp.debug = maybe\n").find("expected refuse or allow"),
            std::string::npos);
  EXPECT_NE(
      message("teetrain-evidence-policy 1\nsnp.debug = allow\nsnp.debug = refuse\n").find("given twice"),
      std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
}

}  // namespace
}  // namespace tt::tee::evidence
