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
                                          StaleCollateral stale = StaleCollateral::Refuse) {
    tv::TdxSpec quote;
    quote.tee_tcb_svn.fill(2);
    const std::vector<std::uint8_t> bytes = tv::issue_tdx_quote(dir_, quote);
    std::ifstream in(dir_ / tv::kIntelQeIdentityChain);
    const std::string pem{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return verify_tcb_info(parse_tcb_info(tv::issue_tcb_info(dir_, spec), "tcb"),
                           certificates_from_pem(pem, "chain"), parse_tdx_quote(bytes, "q"),
                           roots_->intel_sgx_root, std::nullopt, stale, lowest);
  }
  static std::filesystem::path dir_;
  static std::unique_ptr<EvidenceRoots> roots_;
};
std::filesystem::path TcbInfoTestVendor::dir_;
std::unique_ptr<EvidenceRoots> TcbInfoTestVendor::roots_;

tv::TcbInfoSpec with_status(const std::string& status) {
  return {.next_update_s = 86400L, .status = status, .tdx_svn = {}, .fmspc = tv::kTestFmspc};
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
  std::string decoy = good;  // "tcbInfo" as a string before the key: the signed object must be the read one
  decoy.insert(1, "\"x\":\"tcbInfo\",\"y\":{\"id\":\"TDX\"},");
  EXPECT_NE(message(decoy).find("not the one the file holds"), std::string::npos) << message(decoy);
}

}  // namespace
}  // namespace tt::tee::evidence
