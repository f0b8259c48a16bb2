// Intel's TDX TCB info read offline (tee/evidence/tdx_tcb_info.h):
//   - Intel's published sample (go-tdx-guest's, for the SPR quote's FMSPC 50806f000000): its signature
//     verifies under the bundled SGX root on a date its TCB signing certificate was valid, it is expired
//     after its nextUpdate unless accepted, and the quote's platform is below both of its levels (its
//     SGX components 3,3,2,... are below the levels' 5,5,2,...), as Intel's library also finds;
//   - the PCK certificate's SGX extensions read as `openssl asn1parse` shows them;
//   - the level selection: the first level every component reaches, component by component at the
//     boundary, PCESVN, TEE_TCB_SVN from byte 2 when byte 1 (the TDX module's major version) is set;
//   - each status accepted or refused under the default and a policy's lowest status (Revoked never);
//   - the test vendor's TCB info: current and UpToDate passes, a changed byte, another FMSPC, expiry;
//   - the TDX module (Note [TDX module identity]): the sample has tdxModule alone (signer 0, attributes 0
//     under a full mask): the SPR quote (module major version 0) and the COS quote (major 1) both match
//     it, the COS quote's module TCB level NOT checked; with the test vendor's tdxModuleIdentities, the
//     identity of the quote's major version, a wrong MRSIGNERSEAM or attributes, a missing identity, an
//     OutOfDate or Revoked module combined with the platform's status as Intel combines them;
//   - malformed JSON is an InputError naming the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/tdx_tcb_info.h"
#include "tests/support/test_vendor/test_vendor.h"
#include "tests/tee/evidence_fixtures.h"

namespace tt::tee::evidence {
namespace {

namespace tv = test_vendor;

constexpr const char* kSampleTcbInfo = "intel_tcb_info_50806f000000.json";
constexpr const char* kSampleChain = "intel_tcb_signing_chain.pem";
constexpr std::int64_t k20230620 = 1687219200;  // the sample is current (nextUpdate 2023-07-18)
constexpr std::int64_t k20230801 = 1690848000;  // after its nextUpdate, the signing certificate valid

TdxQuote spr_quote() {
  const std::string bytes = test::fixture(test::kTdxSpr);
  return parse_tdx_quote(ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "spr");
}

std::vector<Check> failed(const std::vector<CheckOutcome>& checks) {
  std::vector<Check> out;
  for (const CheckOutcome& c : checks)
    if (!c.ok) out.push_back(c.check);
  return out;
}

std::vector<CheckOutcome> verify_sample(std::int64_t at, StaleCollateral stale) {
  const std::vector<Certificate> chain = certificates_from_pem(test::fixture(kSampleChain), "chain");
  return verify_tcb_info(parse_tcb_info(test::fixture(kSampleTcbInfo), "sample"), chain, spr_quote(),
                         intel_sgx_root(), at, stale, kDefaultLowestTcbStatus);
}

TEST(TcbInfo, IntelsSampleIsSignedForTheQuotesFmspcAndThePlatformIsBelowItsLevels) {
  const TcbInfo info = parse_tcb_info(test::fixture(kSampleTcbInfo), "sample");
  EXPECT_EQ(to_hex(info.fmspc), "50806f000000");
  ASSERT_EQ(info.levels.size(), 2u);
  EXPECT_EQ(info.levels[0].status, TcbStatus::UpToDate);
  EXPECT_EQ(info.levels[1].status, TcbStatus::OutOfDate);
  EXPECT_EQ(info.levels[1].pcesvn, 5);
  const std::vector<CheckOutcome> checks = verify_sample(k20230620, StaleCollateral::Refuse);
  EXPECT_EQ(failed(checks), std::vector<Check>{Check::TcbStatus});
  EXPECT_NE(checks.back().detail.find("below every TCB level of FMSPC 50806f000000"), std::string::npos)
      << checks.back().detail;
  const std::vector<CheckOutcome> late = verify_sample(k20230801, StaleCollateral::Refuse);
  EXPECT_EQ(failed(late), (std::vector<Check>{Check::Collateral, Check::TcbStatus}));
  EXPECT_NE(late.front().detail.find("'sample' expired at its nextUpdate 2023-07-18T08:42:58Z"),
            std::string::npos);
  const std::vector<CheckOutcome> accepted = verify_sample(k20230801, StaleCollateral::Accept);
  EXPECT_TRUE(accepted.front().ok);
  EXPECT_NE(accepted.front().detail.find("EXPIRED at 2023-07-18T08:42:58Z"), std::string::npos);
}

TEST(TcbInfo, AChangedByteOfTheSampleBreaksItsSignature) {
  std::string json = test::fixture(kSampleTcbInfo);
  json[json.find("\"pcesvn\":11") + 10] = '2';
  const std::vector<Certificate> chain = certificates_from_pem(test::fixture(kSampleChain), "chain");
  const auto checks = verify_tcb_info(parse_tcb_info(json, "altered"), chain, spr_quote(), intel_sgx_root(),
                                      k20230620, StaleCollateral::Refuse, kDefaultLowestTcbStatus);
  ASSERT_FALSE(checks.front().ok);
  EXPECT_NE(checks.front().detail.find("signature does not verify"), std::string::npos);
}

TEST(TcbInfo, PckCertificateExtensions) {
  const PckTcb pck = read_pck_tcb(spr_quote().pck_chain.front());
  EXPECT_EQ(to_hex(pck.fmspc), "50806f000000");
  EXPECT_EQ(to_hex(pck.sgx), "03030202020100020000000000000000");
  EXPECT_EQ(pck.pcesvn, 11);
  EXPECT_THROW(read_pck_tcb(spr_quote().pck_chain.back()), IntegrityError);  // the root has none
}

TcbLevel level(std::uint8_t sgx, std::uint16_t pcesvn, std::uint8_t tdx, TcbStatus status) {
  TcbLevel l{.sgx = {}, .pcesvn = pcesvn, .tdx = {}, .tcb_date = "d", .status = status};
  l.sgx.fill(sgx);
  l.tdx.fill(tdx);
  return l;
}

TEST(TcbInfo, LevelSelectionComparesEveryComponentAtItsBoundary) {
  TcbInfo info;
  info.levels = {level(5, 11, 5, TcbStatus::UpToDate), level(4, 10, 4, TcbStatus::SWHardeningNeeded),
                 level(3, 5, 3, TcbStatus::OutOfDate), level(0, 0, 0, TcbStatus::Revoked)};
  PckTcb pck;
  pck.sgx.fill(5);
  pck.pcesvn = 11;
  TcbComponents svn{};
  svn.fill(5);
  EXPECT_EQ(select_tcb_level(info, pck, svn), &info.levels[0]);  // every component equal: reached
  for (std::size_t i = 0; i < kTcbComponents; ++i) {
    PckTcb one_below = pck;
    one_below.sgx[i] = 4;
    EXPECT_EQ(select_tcb_level(info, one_below, svn), &info.levels[1]) << "SGX component " << i;
  }
  PckTcb pce_below = pck;
  pce_below.pcesvn = 10;
  EXPECT_EQ(select_tcb_level(info, pce_below, svn), &info.levels[1]);
  TcbComponents tdx_below = svn;
  tdx_below[15] = 4;
  EXPECT_EQ(select_tcb_level(info, pck, tdx_below), &info.levels[1]);
  TcbComponents module_version = svn;  // byte 1 set: bytes 0 and 1 are the module's identity
  module_version[0] = 0;
  module_version[1] = 1;
  EXPECT_EQ(select_tcb_level(info, pck, module_version), &info.levels[0]);
  module_version[1] = 0;  // byte 1 clear: byte 0 counts
  EXPECT_EQ(select_tcb_level(info, pck, module_version), &info.levels[3]);
  pck.sgx.fill(2);
  EXPECT_EQ(select_tcb_level(info, pck, svn), &info.levels[3]);
  info.levels.pop_back();
  EXPECT_EQ(select_tcb_level(info, pck, svn), nullptr);
}

class TcbInfoTestVendor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("tt_tcb_info_" + std::to_string(::getpid()));
    tv::make_roots(dir_);
    roots_ = std::make_unique<EvidenceRoots>(load_test_roots(dir_));
  }
  static void TearDownTestSuite() {
    roots_.reset();
    std::filesystem::remove_all(dir_);
  }
  static std::vector<CheckOutcome> checks(const tv::TcbInfoSpec& spec, TcbStatus lowest,
                                          StaleCollateral stale = StaleCollateral::Refuse,
                                          const tv::TdxSpec& quote = svn_2()) {
    const std::vector<std::uint8_t> bytes = tv::issue_tdx_quote(dir_, quote);
    std::ifstream in(dir_ / tv::kIntelQeIdentityChain);
    const std::string pem{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return verify_tcb_info(parse_tcb_info(tv::issue_tcb_info(dir_, spec), "tcb"),
                           certificates_from_pem(pem, "chain"), parse_tdx_quote(bytes, "q"),
                           roots_->intel_sgx_root, std::nullopt, stale, lowest);
  }
  // TEE_TCB_SVN all 2: the TDX module's major version 2 (identity TDX_02), ISVSVN 2.
  static tv::TdxSpec svn_2() {
    tv::TdxSpec quote;
    quote.tee_tcb_svn.fill(2);
    return quote;
  }
  static std::filesystem::path dir_;
  static std::unique_ptr<EvidenceRoots> roots_;
};
std::filesystem::path TcbInfoTestVendor::dir_;
std::unique_ptr<EvidenceRoots> TcbInfoTestVendor::roots_;

tv::TcbInfoSpec with_status(const std::string& status) {
  return {.next_update_s = 86400L,
          .status = status,
          .tdx_svn = {},
          .fmspc = tv::kTestFmspc,
          .module_mrsigner = {},
          .module_identities = true,
          .module_status = "UpToDate"};
}

TEST_F(TcbInfoTestVendor, EachStatusUnderTheDefaultAndAPolicysLowest) {
  struct Case {
    const char* status;
    bool by_default;
    bool with_out_of_date;
  };
  const Case cases[] = {{"UpToDate", true, true},
                        {"SWHardeningNeeded", true, true},
                        {"ConfigurationNeeded", true, true},
                        {"ConfigurationAndSWHardeningNeeded", true, true},
                        {"OutOfDate", false, true},
                        {"OutOfDateConfigurationNeeded", false, false},
                        {"Revoked", false, false}};
  for (const Case& c : cases) {
    const std::vector<CheckOutcome> d = checks(with_status(c.status), kDefaultLowestTcbStatus);
    EXPECT_EQ(failed(d).empty(), c.by_default) << c.status << ": " << d.back().detail;
    EXPECT_NE(d.back().detail.find(std::string(": ") + c.status), std::string::npos) << d.back().detail;
    EXPECT_EQ(failed(checks(with_status(c.status), TcbStatus::OutOfDate)).empty(), c.with_out_of_date)
        << c.status;
  }
  EXPECT_FALSE(failed(checks(with_status("Revoked"), TcbStatus::OutOfDateConfigurationNeeded)).empty());
}

TEST_F(TcbInfoTestVendor, TdxComponentsFmspcAndExpiry) {
  tv::TcbInfoSpec at_quote = with_status("UpToDate");
  at_quote.tdx_svn.fill(2);  // the quote's TEE_TCB_SVN: reached
  EXPECT_EQ(failed(checks(at_quote, kDefaultLowestTcbStatus)), std::vector<Check>{});
  at_quote.tdx_svn[2] = 3;  // one component above the quote's
  const auto above = checks(at_quote, kDefaultLowestTcbStatus);
  EXPECT_EQ(failed(above), std::vector<Check>{Check::TcbStatus});
  EXPECT_NE(above.back().detail.find("below every TCB level"), std::string::npos);
  tv::TcbInfoSpec other = with_status("UpToDate");
  other.fmspc[5] = 1;
  const auto wrong = checks(other, kDefaultLowestTcbStatus);
  EXPECT_EQ(failed(wrong), std::vector<Check>{Check::TcbStatus});
  EXPECT_NE(wrong.back().detail.find("the PCK certificate's platform is FMSPC 7e5700000000"),
            std::string::npos);
  tv::TcbInfoSpec expired = with_status("UpToDate");
  expired.next_update_s = -60;
  EXPECT_EQ(failed(checks(expired, kDefaultLowestTcbStatus)), std::vector<Check>{Check::Collateral});
  EXPECT_EQ(failed(checks(expired, kDefaultLowestTcbStatus, StaleCollateral::Accept)), std::vector<Check>{});
}

TEST(TcbInfo, IntelsSampleHasTdxModuleAloneWhichBothRealQuotesMatch) {
  const TcbInfo info = parse_tcb_info(test::fixture(kSampleTcbInfo), "sample");
  EXPECT_EQ(to_hex(info.tdx_module.mrsigner), std::string(96, '0'));
  EXPECT_EQ(to_hex(info.tdx_module.attributes_mask), "ffffffffffffffff");
  EXPECT_FALSE(info.module_identities.has_value());
  const TdxModuleMatch spr = check_tdx_module(info, spr_quote());  // TEE_TCB_SVN 0300 04..: major 0
  EXPECT_TRUE(spr.outcome.ok) << spr.outcome.detail;
  EXPECT_FALSE(spr.status.has_value());
  EXPECT_NE(spr.said.find("major version 0: no module TCB level"), std::string::npos) << spr.said;
  const std::string bytes = test::fixture(test::kTdxCos);
  const TdxQuote cos =
      parse_tdx_quote(ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "cos");
  const TdxModuleMatch m = check_tdx_module(info, cos);  // TEE_TCB_SVN 0401 07..: module 1.4
  EXPECT_TRUE(m.outcome.ok) << m.outcome.detail;
  EXPECT_NE(m.said.find("its TCB level NOT checked (the TCB info has no tdxModuleIdentities)"),
            std::string::npos)
      << m.said;
  const std::vector<CheckOutcome> checks = verify_sample(k20230620, StaleCollateral::Refuse);
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[1].check, Check::TdxModule);
  EXPECT_TRUE(checks[1].ok);
}

TEST(TcbInfo, ModuleStatusCombinesWithThePlatformsAsIntelsLibraryDoes) {
  using S = TcbStatus;
  struct Case {
    S platform, module, combined;
  };
  const Case cases[] = {{S::UpToDate, S::UpToDate, S::UpToDate},
                        {S::SWHardeningNeeded, S::UpToDate, S::SWHardeningNeeded},
                        {S::UpToDate, S::OutOfDate, S::OutOfDate},
                        {S::SWHardeningNeeded, S::OutOfDate, S::OutOfDate},
                        {S::ConfigurationNeeded, S::OutOfDate, S::OutOfDateConfigurationNeeded},
                        {S::ConfigurationAndSWHardeningNeeded, S::OutOfDate, S::OutOfDateConfigurationNeeded},
                        {S::OutOfDate, S::OutOfDate, S::OutOfDate},
                        {S::UpToDate, S::Revoked, S::Revoked},
                        {S::Revoked, S::UpToDate, S::Revoked}};
  for (const Case& c : cases)
    EXPECT_EQ(combine_with_module(c.platform, c.module), c.combined)
        << tcb_status_name(c.platform) << " + " << tcb_status_name(c.module);
}

tv::TcbInfoSpec with_module(const std::string& status) {
  tv::TcbInfoSpec spec = with_status("UpToDate");
  spec.module_status = status;
  return spec;
}

TEST_F(TcbInfoTestVendor, TheModulesIdentityAndStatus) {
  const auto good = checks(with_module("UpToDate"), kDefaultLowestTcbStatus);
  EXPECT_EQ(failed(good), std::vector<Check>{});
  EXPECT_NE(good.back().detail.find("; TDX module: TDX_02's signer and attributes, ISVSVN 2 at TCB level of "
                                    "2026-01-01T00:00:00Z: UpToDate"),
            std::string::npos)
      << good.back().detail;
  tv::TdxSpec other_signer = svn_2();
  other_signer.mrsigner_seam[0] = 0xab;
  const auto signer =
      checks(with_module("UpToDate"), kDefaultLowestTcbStatus, StaleCollateral::Refuse, other_signer);
  EXPECT_EQ(failed(signer), std::vector<Check>{Check::TdxModule});
  EXPECT_NE(signer[1].detail.find("the quote's MRSIGNERSEAM ab00"), std::string::npos) << signer[1].detail;
  tv::TdxSpec major_3 = svn_2();
  major_3.tee_tcb_svn[1] = 3;
  const auto missing =
      checks(with_module("UpToDate"), kDefaultLowestTcbStatus, StaleCollateral::Refuse, major_3);
  EXPECT_EQ(failed(missing), std::vector<Check>{Check::TdxModule});
  EXPECT_NE(missing[1].detail.find("no TDX module identity TDX_03"), std::string::npos) << missing[1].detail;
  const auto ood = checks(with_module("OutOfDate"), kDefaultLowestTcbStatus);
  EXPECT_EQ(failed(ood), std::vector<Check>{Check::TcbStatus});
  EXPECT_NE(ood.back().detail.find("; TDX module: TDX_02's signer and attributes, ISVSVN 2 at TCB level of "),
            std::string::npos);
  EXPECT_NE(ood.back().detail.find(": UpToDate, combined with the TDX module's: OutOfDate (refused: "),
            std::string::npos)
      << ood.back().detail;
  EXPECT_EQ(failed(checks(with_module("OutOfDate"), TcbStatus::OutOfDate)), std::vector<Check>{});
  const auto revoked = checks(with_module("Revoked"), TcbStatus::OutOfDateConfigurationNeeded);
  EXPECT_EQ(failed(revoked), std::vector<Check>{Check::TcbStatus});
  EXPECT_NE(revoked.back().detail.find("combined with the TDX module's: Revoked (refused: "),
            std::string::npos);
  tv::TcbInfoSpec older = with_module("Revoked");  // no identities: the module's level is not read
  older.module_identities = false;
  const auto unlevelled = checks(older, kDefaultLowestTcbStatus);
  EXPECT_EQ(failed(unlevelled), std::vector<Check>{});
  EXPECT_NE(unlevelled.back().detail.find("its TCB level NOT checked"), std::string::npos);
}

TEST_F(TcbInfoTestVendor, TheModulesAttributesUnderTheirMask) {
  const tv::TdxSpec spec = svn_2();
  const TdxQuote quote = parse_tdx_quote(tv::issue_tdx_quote(dir_, spec), "q");
  TcbInfo info = parse_tcb_info(tv::issue_tcb_info(dir_, with_status("UpToDate")), "tcb");
  ASSERT_TRUE(info.module_identities && info.module_identities->size() == 2);
  TdxModuleIdentity& tdx_02 = info.module_identities->at(1);
  ASSERT_EQ(tdx_02.id, "TDX_02");
  EXPECT_TRUE(check_tdx_module(info, quote).outcome.ok);
  tdx_02.attributes[7] = 0x80;  // expected set where the quote's is clear
  const TdxModuleMatch differ = check_tdx_module(info, quote);
  EXPECT_FALSE(differ.outcome.ok);
  EXPECT_NE(
      differ.outcome.detail.find("SEAMATTRIBUTES 0000000000000000 are not the TCB info's TDX_02 attributes"),
      std::string::npos)
      << differ.outcome.detail;
  tdx_02.attributes_mask[7] = 0x7f;  // that bit outside the mask: not compared
  EXPECT_TRUE(check_tdx_module(info, quote).outcome.ok);
}

TEST(TcbInfo, MalformedJsonIsAnInputErrorNamingTheField) {
  const std::string good = test::fixture(kSampleTcbInfo);
  const auto message = [](const std::string& json) {
    try {
      (void)parse_tcb_info(json, "t");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("{\"tcbInfo\": 1}").find("not Intel's TCB info JSON"), std::string::npos);
  std::string sgx = good;
  sgx.replace(sgx.find("\"TDX\""), 5, "\"SGX\"");
  EXPECT_NE(message(sgx).find("not a TDX TCB info"), std::string::npos);
  std::string status = good;
  status.replace(status.find("\"UpToDate\""), 10, "\"Fine\"");
  EXPECT_NE(message(status).find("unknown tcbStatus \"Fine\""), std::string::npos);
  std::string short_list = good;
  const std::string first = "{\"svn\":5,\"category\":\"BIOS\",\"type\":\"Early Microcode Update\"},";
  short_list.erase(short_list.find(first), first.size());
  EXPECT_NE(message(short_list).find("\"sgxtcbcomponents\" is not a list of 16"), std::string::npos);
  std::string no_module = good;
  no_module.erase(no_module.find("\"tdxModule\""),
                  std::string("\"tdxModule\":{\"mrsigner\":\"").size() + 96 +
                      std::string("\",\"attributes\":\"0000000000000000\","
                                  "\"attributesMask\":\"FFFFFFFFFFFFFFFF\"},")
                          .size());
  EXPECT_NE(message(no_module).find("no \"tdxModule\""), std::string::npos) << message(no_module);
  std::string decoy = good;  // "tcbInfo" as a string before the key: the signed object must be the read one
  decoy.insert(1, "\"x\":\"tcbInfo\",\"y\":{\"id\":\"TDX\"},");
  EXPECT_NE(message(decoy).find("not the one the file holds"), std::string::npos) << message(decoy);
}

}  // namespace
}  // namespace tt::tee::evidence
