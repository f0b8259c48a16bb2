// Fuzz-style (tests/common/fuzz.h): the parsers of real evidence (the SDK's JSON, the local verifier's
// hex report and PEM chain, SPDM transcripts, NVIDIA opaque data, RIM XML, and the RIM signature check
// on whatever still parses; TDX quotes and SEV-SNP reports with their checks; the verifier's policy file;
// Intel's QE identity and TCB info) refuse damaged input with InputError or IntegrityError only: never a
// crash, another exception, or an acceptance of a damaged signed object.
#include <gtest/gtest.h>

#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/evidence_policy.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_collateral.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tdx_tcb_info.h"
#include "tests/common/fuzz.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

using tt::testing::fuzz_inputs;
using tt::testing::FuzzPlan;
using tt::testing::run_parser;

std::string as_string(const std::vector<std::uint8_t>& v) {
  return {v.begin(), v.end()};
}

ByteView bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(EvidenceFuzz, SpdmTranscript) {
  const GpuEvidence g = parse_sdk_evidence_json(test::fixture("hopper_evidence.json"), "f")[0];
  const EvidenceTrust trust{
      nvidia_device_root(), {}, test::nonce(test::kSdkNonce), std::nullopt, StaleCrl::Refuse};
  int accepted_and_verified = 0;
  for (const auto& in : fuzz_inputs(as_string(g.report), FuzzPlan{})) {
    GpuEvidence damaged = g;
    const int rc = run_parser(
        [&] {
          damaged.report.assign(in.bytes.begin(), in.bytes.end());
          damaged.transcript = parse_measurement_transcript(damaged.report, kHopperSignatureBytes);
          damaged.opaque = parse_opaque_data(damaged.transcript.response.opaque);
        },
        in.what);
    if (rc != 0) continue;
    bool all_ok = true;
    for (const CheckOutcome& c : verify_gpu_evidence(damaged, trust)) all_ok = all_ok && c.ok;
    accepted_and_verified += all_ok ? 1 : 0;
  }
  EXPECT_EQ(accepted_and_verified, 0) << "a damaged report verified";
}

TEST(EvidenceFuzz, OpaqueData) {
  const GpuEvidence g = parse_sdk_evidence_json(test::fixture("hopper_evidence.json"), "f")[0];
  for (const auto& in : fuzz_inputs(as_string(g.transcript.response.opaque), FuzzPlan{})) {
    run_parser(
        [&] {
          for (const OpaqueField& f : parse_opaque_data(bytes(in.bytes))) (void)opaque_field_text(f);
        },
        in.what);
  }
}

TEST(EvidenceFuzz, SdkJson) {
  const std::string json = test::fixture("hopper_evidence.json");
  FuzzPlan plan;
  plan.truncate_upto = 120;
  for (const auto& in : fuzz_inputs(json, plan))
    run_parser([&] { parse_sdk_evidence_json(in.bytes, "fuzz"); }, in.what);
  // Inside the JSON: a damaged base64 report or chain.
  for (const char* key : {"\"evidence\": \"", "\"certificate\": \""}) {
    const std::size_t at = json.find(key) + std::string(key).size();
    for (std::size_t i = 0; i < 64; ++i) {
      std::string s = json;
      s[at + i * 37 % 4000] = static_cast<char>("A/=!"[i % 4]);
      run_parser([&] { parse_sdk_evidence_json(s, "fuzz"); },
                 std::string(key) + " char " + std::to_string(i));
    }
  }
}

TEST(EvidenceFuzz, ReportPair) {
  const std::string report = test::fixture("hopperAttestationReport.txt");
  const std::string chain = test::fixture("hopperCertChain.txt");
  FuzzPlan plan;
  plan.random_buffers = 30;
  for (const auto& in : fuzz_inputs(report, plan))
    run_parser([&] { parse_report_pair(in.bytes, chain, "fuzz"); }, in.what);
  for (const auto& in : fuzz_inputs(chain, plan))
    run_parser([&] { parse_report_pair(report, in.bytes, "fuzz"); }, in.what);
}

// Where two strings first differ (their common length when one is a prefix of the other).
std::size_t first_difference(const std::string& a, const std::string& b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

TEST(EvidenceFuzz, RimXmlAndItsSignature) {
  const std::string xml = test::fixture(test::kVbiosRim);
  // KeyInfo is not signed (its certificates are checked by their own chain); a damaged copy of the
  // root there, which no path uses, may leave the signature valid. Damage anywhere else must not.
  const std::size_t key_info = xml.find("<ds:KeyInfo>");
  ASSERT_NE(key_info, std::string::npos);
  FuzzPlan plan;
  plan.truncate_upto = 80;
  plan.random_flips = 120;
  plan.random_buffers = 30;
  for (const auto& in : fuzz_inputs(xml, plan)) {
    std::optional<Rim> rim;
    if (run_parser([&] { rim = parse_rim(in.bytes, "fuzz"); }, in.what) != 0) continue;
    bool ok = false;
    EXPECT_NE(
        run_parser([&] { ok = verify_rim_signature(*rim, nvidia_rim_root(), test::kRimsValid).ok; }, in.what),
        -1);
    if (ok) {
      EXPECT_GE(first_difference(in.bytes, xml), key_info) << in.what << " verified";
    }
  }
}

// The verifier's policy file (Note [Evidence policy]): damaged text is an InputError, never a crash;
// what still parses writes a canonical text that reads back to the same digest.
TEST(EvidenceFuzz, PolicyFile) {
  const std::string policy = "# seed\nteetrain-evidence-policy 1\ntdx.mrtd = " + std::string(96, 'a') +
                             "\ntdx.debug = refuse\ntdx.min_tee_tcb_svn = " + std::string(32, '0') +
                             "\nsnp.measurement = " + std::string(96, 'b') +
                             "\nsnp.min_reported_tcb = 0300000000000873\ngpu.driver_version = 550.90.07\n"
                             "gpu.rim = NV_GPU_DRIVER_GH100_550.90.07\n";
  for (const auto& in : fuzz_inputs(policy, FuzzPlan{})) {
    run_parser(
        [&] {
          const EvidencePolicy p = parse_policy(in.bytes, "fuzzed policy");
          EXPECT_EQ(policy_digest(parse_policy(write_policy(p), "rewritten")), policy_digest(p)) << in.what;
        },
        in.what);
  }
}

// Intel's QE identity JSON (tee/evidence/tdx_collateral.h): damaged text is an InputError, never a crash.
TEST(EvidenceFuzz, QeIdentity) {
  const std::string json =
      "{\"enclaveIdentity\":{\"id\":\"TD_QE\",\"version\":2,\"nextUpdate\":\"2026-12-06T08:50:32Z\","
      "\"miscselect\":\"00000000\",\"miscselectMask\":\"FFFFFFFF\",\"attributes\":\"" +
      std::string(32, '0') + "\",\"attributesMask\":\"" + std::string(32, 'F') + "\",\"mrsigner\":\"" +
      std::string(64, '5') +
      "\",\"isvprodid\":2,\"tcbLevels\":[{\"tcb\":{\"isvsvn\":8},\"tcbStatus\":"
      "\"UpToDate\"}]},\"signature\":\"" +
      std::string(128, 'a') + "\"}";
  for (const auto& in : fuzz_inputs(json, FuzzPlan{}))
    run_parser([&] { (void)parse_qe_identity(in.bytes, "qe"); }, in.what);
}

// Intel's TDX TCB info (tee/evidence/tdx_tcb_info.h), from Intel's published sample: damaged text is an
// InputError, never a crash, and no damaged signed object passes the signature check.
TEST(EvidenceFuzz, TcbInfo) {
  const std::string json = test::fixture("intel_tcb_info_50806f000000.json");
  const std::vector<Certificate> chain =
      certificates_from_pem(test::fixture("intel_tcb_signing_chain.pem"), "chain");
  const std::string signed_text = parse_tcb_info(json, "tcb").signed_part.signed_text;
  const TdxQuote quote = parse_tdx_quote(bytes(test::fixture(test::kTdxSpr)), "spr");
  int damaged_and_signed = 0;
  for (const auto& in : fuzz_inputs(json, FuzzPlan{})) {
    std::optional<TcbInfo> info;
    if (run_parser([&] { info = parse_tcb_info(in.bytes, "tcb"); }, in.what) != 0) continue;
    const bool signed_ok = verify_tcb_info(*info, chain, quote, intel_sgx_root(), 1687219200,
                                           StaleCollateral::Refuse, kDefaultLowestTcbStatus)
                               .front()
                               .ok;
    damaged_and_signed += signed_ok && info->signed_part.signed_text != signed_text ? 1 : 0;
  }
  EXPECT_EQ(damaged_and_signed, 0) << "a damaged TCB info passed its signature check";
}

TEST(EvidenceFuzz, TdxQuote) {
  const std::string quote = test::fixture(test::kTdxSpr);
  const TdxTrust trust{intel_sgx_root(), {}, std::nullopt, std::nullopt, StaleCrl::Refuse};
  FuzzPlan plan;
  plan.truncate_upto = 700;  // through the header, the body and the signature data's start
  for (const auto& in : fuzz_inputs(quote, plan)) {
    std::optional<TdxQuote> q;
    if (run_parser([&] { q = parse_tdx_quote(bytes(in.bytes), "fuzz"); }, in.what) != 0) continue;
    bool all_ok = true;
    for (const CheckOutcome& c : verify_tdx_quote(*q, trust)) all_ok = all_ok && c.ok;
    // Only what no check covers may change and still verify (the 39 bytes after the quote, PEM text
    // around the certificates): the signed header and body never.
    if (all_ok) {
      EXPECT_EQ(std::vector<std::uint8_t>(q->signed_bytes),
                std::vector<std::uint8_t>(quote.begin(), quote.begin() + 632))
          << in.what;
    }
  }
}

TEST(EvidenceFuzz, SnpReport) {
  const std::string report = test::fixture(test::kSnpVirteeReport);
  const std::vector<Certificate> vcek = {Certificate::from_der(bytes(test::fixture(test::kSnpVirteeVcek)))};
  const SnpTrust trust{amd_roots(), {}, std::nullopt, 1735689600, StaleCrl::Refuse};
  FuzzPlan plan;
  plan.truncate_upto = 1200;       // every prefix: each names the field it ends in
  plan.flip_all_bits_upto = 0x60;  // the header, signer info and REPORT_DATA's start
  int verified = 0;
  for (const auto& in : fuzz_inputs(report, plan)) {
    std::optional<SnpReport> r;
    if (run_parser([&] { r = parse_snp_report(bytes(in.bytes), "fuzz"); }, in.what) != 0) continue;
    bool all_ok = true;
    for (const CheckOutcome& c : verify_snp_report(*r, vcek, trust)) all_ok = all_ok && c.ok;
    // The parser refuses a changed signature padding, the signature check every other byte.
    if (all_ok) {
      EXPECT_EQ(in.bytes, report) << in.what;
      ++verified;
    }
  }
  EXPECT_EQ(verified, 0) << "the fuzz plan holds no unchanged copy, so nothing may verify";
}

// The VCEK's AMD extensions are read from an untrusted certificate: a damaged VCEK parses as a
// certificate or is refused, its extensions read or reported missing, and it never verifies the report.
TEST(EvidenceFuzz, SnpVcek) {
  const std::string der = test::fixture(test::kSnpVirteeVcek);
  const std::string report = test::fixture(test::kSnpVirteeReport);
  const SnpReport r = parse_snp_report(bytes(report), "fuzz");
  const SnpTrust trust{amd_roots(), {}, std::nullopt, 1735689600, StaleCrl::Refuse};
  FuzzPlan plan;
  plan.truncate_upto = 64;
  plan.flip_all_bits_upto = 0;
  for (const auto& in : fuzz_inputs(der, plan)) {
    std::vector<Certificate> vcek;
    if (run_parser([&] { vcek.push_back(Certificate::from_der(bytes(in.bytes))); }, in.what) != 0) continue;
    (void)describe_vcek(vcek);
    bool all_ok = true;
    for (const CheckOutcome& c : verify_snp_report(r, vcek, trust)) all_ok = all_ok && c.ok;
    EXPECT_FALSE(all_ok) << in.what << ": a damaged VCEK verified";
  }
}

}  // namespace
}  // namespace tt::tee::evidence
