// The test vendor (tests/support/test_vendor): its TDX quote, SEV-SNP report and GPU evidence pass every
// check of tee/evidence under its test roots (Note [Test roots]) and fail the chain under the vendors'
// bundled ones; one flipped byte in each signed region fails the check that covers it; the revoked and
// expired variants fail the chain naming why; check_roots refuses test roots unless allowed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/rim.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_collateral.h"
#include "tee/evidence/tdx_quote.h"
#include "tests/support/test_vendor/test_vendor.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence {
namespace {

namespace tv = test_vendor;

class TestVendor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("tt_test_vendor_" + std::to_string(::getpid()));
    tv::make_roots(dir_);
    roots_ = std::make_unique<EvidenceRoots>(load_test_roots(dir_));
  }
  static void TearDownTestSuite() {
    roots_.reset();
    std::filesystem::remove_all(dir_);
  }
  static std::filesystem::path dir_;
  static std::unique_ptr<EvidenceRoots> roots_;
};
std::filesystem::path TestVendor::dir_;
std::unique_ptr<EvidenceRoots> TestVendor::roots_;

// The checks that failed, in order.
std::vector<Check> failed(const std::vector<CheckOutcome>& checks) {
  std::vector<Check> out;
  for (const CheckOutcome& c : checks)
    if (!c.ok) out.push_back(c.check);
  return out;
}

std::string detail_of(const std::vector<CheckOutcome>& checks, Check check) {
  for (const CheckOutcome& c : checks)
    if (c.check == check) return c.detail;
  return {};
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::array<std::uint8_t, 64> report_data() {
  std::array<std::uint8_t, 64> rd{};
  for (std::size_t i = 0; i < 32; ++i) rd[i] = static_cast<std::uint8_t>(i + 1);
  return rd;
}

std::vector<CheckOutcome> tdx_checks(const std::vector<std::uint8_t>& bytes, const EvidenceRoots& roots,
                                     std::vector<std::shared_ptr<X509_crl_st>> crls = {}) {
  return verify_tdx_quote(parse_tdx_quote(bytes, "test quote"),
                          {roots.intel_sgx_root, std::move(crls), report_data(), std::nullopt});
}

TEST_F(TestVendor, TdxQuoteVerifiesUnderTheTestRootsOnly) {
  tv::TdxSpec spec;
  spec.report_data = report_data();
  spec.mrtd.fill(0x3D);
  const std::vector<std::uint8_t> quote = tv::issue_tdx_quote(dir_, spec);
  const TdxQuote q = parse_tdx_quote(quote, "test quote");
  EXPECT_EQ(to_hex(q.body().subspan(136, 48)), to_hex(spec.mrtd));
  EXPECT_EQ(failed(tdx_checks(quote, *roots_)), std::vector<Check>{});
  EXPECT_EQ(failed(tdx_checks(quote, bundled_roots())), std::vector<Check>{Check::CertificateChain});
}

TEST_F(TestVendor, TdxFlippedByteFailsTheCheckCoveringIt) {
  tv::TdxSpec spec;
  spec.report_data = report_data();
  const std::vector<std::uint8_t> quote = tv::issue_tdx_quote(dir_, spec);
  struct Flip {
    std::size_t at;
    Check check;
  };
  const std::size_t sig = kTdxHeaderBytes + kTdxBodyBytes + 4;              // signature data
  for (const Flip f : {Flip{kTdxHeaderBytes + 136, Check::Signature},       // MRTD
                       Flip{sig + 10, Check::Signature},                    // the quote signature
                       Flip{sig + 128 + 6 + 64, Check::QeReport},           // QE report's MRENCLAVE
                       Flip{sig + 128 + 6 + 384 + 10, Check::QeReport}}) {  // QE report signature
    std::vector<std::uint8_t> bad = quote;
    bad[f.at] ^= 0x01;
    const std::vector<Check> got = failed(tdx_checks(bad, *roots_));
    ASSERT_FALSE(got.empty()) << "flipped byte " << f.at;
    EXPECT_EQ(got.front(), f.check) << "flipped byte " << f.at;
  }
  std::vector<std::uint8_t> other_key =
      quote;  // a y-coordinate bit: usually not on the curve, never vouched for
  other_key[sig + 64 + 63] ^= 0x01;
  const std::vector<Check> got = failed(tdx_checks(other_key, *roots_));
  EXPECT_NE(std::find(got.begin(), got.end(), Check::AttestationKey), got.end());
  std::vector<std::uint8_t> other_data = quote;
  other_data[kTdxHeaderBytes + 520] ^= 0x01;  // REPORTDATA: the signature and the nonce both fail
  EXPECT_EQ(failed(tdx_checks(other_data, *roots_)), (std::vector<Check>{Check::Signature, Check::Nonce}));
}

TEST_F(TestVendor, RevokedAndExpiredPckFailTheChain) {
  tv::TdxSpec spec;
  spec.report_data = report_data();
  spec.variant = tv::Variant::Revoked;
  const auto crl = load_crl(dir_ / tv::kIntelPckCrl);
  const std::vector<CheckOutcome> revoked = tdx_checks(tv::issue_tdx_quote(dir_, spec), *roots_, {crl});
  EXPECT_EQ(failed(revoked), std::vector<Check>{Check::CertificateChain});
  EXPECT_NE(detail_of(revoked, Check::CertificateChain).find("revoked"), std::string::npos);
  spec.variant = tv::Variant::Expired;
  const std::vector<CheckOutcome> expired = tdx_checks(tv::issue_tdx_quote(dir_, spec), *roots_, {crl});
  EXPECT_EQ(failed(expired), std::vector<Check>{Check::CertificateChain});
  EXPECT_NE(detail_of(expired, Check::CertificateChain).find("expired"), std::string::npos);
  spec.variant = tv::Variant::Good;
  EXPECT_EQ(failed(tdx_checks(tv::issue_tdx_quote(dir_, spec), *roots_, {crl})), std::vector<Check>{});
}

std::vector<CheckOutcome> snp_checks(const tv::SnpEvidence& ev, const EvidenceRoots& roots) {
  const SnpReport report = parse_snp_report(ev.report, "test report");
  const std::vector<Certificate> vcek = certificates_from_pem(ev.vcek_pem, "test VCEK");
  return verify_snp_report(report, vcek, {roots.amd_roots, {}, report_data(), std::nullopt});
}

TEST_F(TestVendor, SnpReportVerifiesAndEachSignedRegionIsCovered) {
  tv::SnpSpec spec;
  spec.report_data = report_data();
  spec.measurement.fill(0x4E);
  spec.reported_tcb = {3, 0, 0, 0, 0, 0, 8, 115};
  spec.chip_id.fill(0xC1);
  const tv::SnpEvidence ev = tv::issue_snp_report(dir_, spec);
  EXPECT_EQ(failed(snp_checks(ev, *roots_)), std::vector<Check>{});
  EXPECT_EQ(failed(snp_checks(ev, bundled_roots())), std::vector<Check>{Check::CertificateChain});
  tv::SnpEvidence bad = ev;
  bad.report[0x90] ^= 0x01;  // MEASUREMENT
  EXPECT_EQ(failed(snp_checks(bad, *roots_)), std::vector<Check>{Check::Signature});
  bad = ev;
  bad.report[0x1A0] ^= 0x01;  // CHIP_ID: the signature, and the VCEK is another chip's
  EXPECT_EQ(failed(snp_checks(bad, *roots_)), (std::vector<Check>{Check::Signature, Check::ChipId}));
  bad = ev;
  bad.report[0x2A0] ^= 0x01;  // SIGNATURE's r
  EXPECT_EQ(failed(snp_checks(bad, *roots_)), std::vector<Check>{Check::Signature});
}

std::vector<CheckOutcome> gpu_checks(const SdkEvidenceEntry& entry, const EvidenceRoots& roots,
                                     const SpdmNonce& nonce) {
  const std::vector<GpuEvidence> gpus = parse_sdk_evidence_json(write_sdk_evidence_json({entry}), "test GPU");
  return verify_gpu_evidence(gpus.front(), {roots.nvidia_device_root, {}, nonce, std::nullopt});
}

TEST_F(TestVendor, GpuEvidenceVerifiesAndAnswersItsNonce) {
  tv::GpuSpec spec;
  spec.nonce.fill(0x5A);
  const SdkEvidenceEntry gpu = tv::issue_gpu_evidence(dir_, spec);
  EXPECT_EQ(failed(gpu_checks(gpu, *roots_, spec.nonce)), std::vector<Check>{});
  EXPECT_EQ(failed(gpu_checks(gpu, bundled_roots(), spec.nonce)),
            std::vector<Check>{Check::CertificateChain});
  SpdmNonce other = spec.nonce;
  other[0] ^= 0x01;
  EXPECT_EQ(failed(gpu_checks(gpu, *roots_, other)), std::vector<Check>{Check::Nonce});
  SdkEvidenceEntry bad = gpu;
  bad.report[37 + 8 + 7] ^= 0x01;  // request (37), response header (8), block header (7): its value
  EXPECT_EQ(failed(gpu_checks(bad, *roots_, spec.nonce)), std::vector<Check>{Check::Signature});
  const GpuEvidence parsed = parse_sdk_evidence_json(write_sdk_evidence_json({gpu}), "g").front();
  EXPECT_EQ(driver_version(parsed.opaque).value_or(""), "550.90.07");
  EXPECT_EQ(vbios_version(parsed.opaque).value_or(""), "96.00.9e.00.01");
}

// NVIDIA's RIM CRLs (tee/evidence/rim.h: RimCrls) on the test vendor's RIMs, whose chain is the signer
// under the RIM root: a current list of the root leaves the chain not revoked and no gap; the list
// revoking the signer refuses it by name; an expired one is a Collateral refusal unless accepted, then
// reported; a list claiming the root's name but signed by another key revokes nothing (the path check
// refuses it instead); without lists the signer is named as not checked.
TEST_F(TestVendor, RimSigningChainAgainstRimCrls) {
  const Rim rim = parse_rim(tv::issue_gpu_rims(dir_, tv::GpuSpec{}).driver, "driver RIM");
  const std::filesystem::path crls = dir_ / "rim_crls";
  tv::write_rim_crls(dir_, crls);
  const Certificate& root = roots_->nvidia_rim_root;
  const auto lists = [&](const char* file, StaleCrl stale) {
    return load_rim_crls({(crls / file).string()}, stale);
  };
  const RimCrls current = lists(tv::kRimCrlEmpty, StaleCrl::Refuse);
  EXPECT_TRUE(check_rim_signature(rim, root, std::nullopt, current).ok);
  EXPECT_EQ(rim_revocation_text({rim}, root, current, std::nullopt),
            "RIM signing chain not revoked (checked against 1 --gpu-rim-crl list(s))");
  const CheckOutcome revoked =
      check_rim_signature(rim, root, std::nullopt, lists(tv::kRimCrlRevoking, StaleCrl::Refuse));
  EXPECT_FALSE(revoked.ok);
  EXPECT_NE(revoked.detail.find("RIM signing certificate '" + rim.signer_chain.front().subject() +
                                "' (serial " + rim.signer_chain.front().serial_hex() + ") is REVOKED"),
            std::string::npos)
      << revoked.detail;
  const CheckOutcome expired =
      check_rim_signature(rim, root, std::nullopt, lists(tv::kRimCrlExpired, StaleCrl::Refuse));
  EXPECT_EQ(expired.check, Check::Collateral);
  EXPECT_FALSE(expired.ok);
  const RimCrls accepted = lists(tv::kRimCrlExpired, StaleCrl::Accept);
  EXPECT_TRUE(check_rim_signature(rim, root, std::nullopt, accepted).ok);
  EXPECT_NE(rim_revocation_text({rim}, root, accepted, std::nullopt)
                .find("; EXPIRED collateral accepted (--allow-expired-collateral): revocation list '"),
            std::string::npos);
  const tv::Signer impostor = tv::load_signer(dir_, tv::kNvidiaDeviceCa);
  const tv::Cert rim_root = tv::read_cert(dir_ / kTestNvidiaRimRoot);  // its name, another CA's key
  tv::write_crl(crls / "forged.crl.pem", rim_root.get(), impostor.key.get(),
                {.revoked = {ASN1_INTEGER_get(X509_get0_serialNumber(rim.signer_chain.front().native()))},
                 .last_update_s = -3600,
                 .next_update_s = 86400});
  const ChainVerdict forged =
      verify_rim_signature(rim, root, std::nullopt, lists("forged.crl.pem", StaleCrl::Refuse));
  EXPECT_FALSE(forged.ok);
  EXPECT_EQ(forged.reason.find("REVOKED"), std::string::npos) << forged.reason;
  EXPECT_EQ(rim_revocation_text({rim}, root, RimCrls{}, std::nullopt),
            "RIM signing chain's revocation NOT checked (no --gpu-rim-crl)");
  const RimCrls other = load_rim_crls({(dir_ / tv::kNvidiaDeviceCrl).string()}, StaleCrl::Refuse);
  EXPECT_EQ(rim_revocation_text({rim}, root, other, std::nullopt),
            "RIM signing chain's revocation NOT checked for '" + rim.signer_chain.front().subject() +
                "' (no --gpu-rim-crl issued by '" + root.subject() + "')");
}

// Intel's QE identity (tee/evidence/tdx_collateral.h) as the test vendor signs it: current and UpToDate
// passes; one changed byte of the signed object, an expired one (unless accepted explicitly) and an
// OutOfDate TCB level fail, naming the check.
TEST_F(TestVendor, QeIdentityCollateral) {
  const TdxQuote q = parse_tdx_quote(tv::issue_tdx_quote(dir_, tv::TdxSpec{}), "quote");
  const std::vector<Certificate> chain =
      certificates_from_pem(read_text(dir_ / tv::kIntelQeIdentityChain), "QE identity chain");
  const auto checks = [&](const std::string& json, StaleCollateral stale) {
    return verify_qe_identity(parse_qe_identity(json, "qe"), chain, q, roots_->intel_sgx_root, std::nullopt,
                              stale);
  };
  const std::string good = tv::issue_qe_identity(dir_, {});
  EXPECT_EQ(failed(checks(good, StaleCollateral::Refuse)), std::vector<Check>{});
  std::string altered = good;
  altered[altered.find("\"isvprodid\":2") + 12] = '3';
  EXPECT_EQ(failed(checks(altered, StaleCollateral::Refuse)),
            (std::vector<Check>{Check::Collateral, Check::QeIdentity}));
  const std::string expired = tv::issue_qe_identity(dir_, {-3600, "UpToDate"});
  EXPECT_EQ(failed(checks(expired, StaleCollateral::Refuse)), std::vector<Check>{Check::Collateral});
  const std::vector<CheckOutcome> accepted = checks(expired, StaleCollateral::Accept);
  EXPECT_EQ(failed(accepted), std::vector<Check>{});
  EXPECT_NE(detail_of(accepted, Check::Collateral).find("EXPIRED"), std::string::npos);
  EXPECT_EQ(failed(checks(tv::issue_qe_identity(dir_, {86400, "OutOfDate"}), StaleCollateral::Refuse)),
            std::vector<Check>{Check::QeIdentity});
  EXPECT_THROW(parse_qe_identity("{\"enclaveIdentity\": 1}", "qe"), InputError);
}

TEST_F(TestVendor, TestRootsAreRefusedUnlessAllowed) {
  const CheckOutcome refused = check_roots(*roots_, TestRoots::Refuse);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.detail.find("test root"), std::string::npos);
  const CheckOutcome allowed = check_roots(*roots_, TestRoots::Allow);
  EXPECT_TRUE(allowed.ok);
  EXPECT_NE(allowed.detail.find("TEST ROOTS"), std::string::npos);
  EXPECT_TRUE(check_roots(bundled_roots(), TestRoots::Refuse).ok);
  EXPECT_THROW(load_test_roots(dir_ / "missing"), InputError);
}

}  // namespace
}  // namespace tt::tee::evidence
