// engine/keys/crl_state: each rank's memory of the newest revocation list it accepted. The state file is
// untrusted: hostile content is refused with IntegrityError naming the line, and fuzzed bytes never
// end any other way. remember_crl refuses a list older than the one remembered for its root, naming
// the rank, the list and both numbers, and records newer ones without forgetting other roots.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "engine/keys/crl_state.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"
#include "tests/common/fuzz.h"
#include "tests/common/temp_dir.h"

namespace tt {
namespace {

namespace fs = std::filesystem;

const std::string kRootA(64, 'a');
const std::string kRootB = "0b" + std::string(62, 'c');
const std::string kHeader = "teetrain-crl-state/1\n";

TEST(CrlState, RoundTripsCanonically) {
  const CrlState state = {{kRootA, 7}, {kRootB, 0}};
  const std::string text = encode_crl_state(state);
  EXPECT_EQ(text, kHeader + kRootB + " 0\n" + kRootA + " 7\n");
  EXPECT_EQ(parse_crl_state(text, "s"), state);
  EXPECT_TRUE(parse_crl_state(kHeader, "s").empty());
  EXPECT_EQ(parse_crl_state(kHeader + kRootA + " 9223372036854775807\n", "s").at(kRootA), tee::kMaxCrlNumber);
}

TEST(CrlState, HostileContentIsRefusedNamingTheLine) {
  struct Case {
    std::string text;
    std::string why;  // part of the message
  };
  const std::string many = [] {
    std::string s = kHeader;
    for (int i = 0; i <= 256; ++i) {
      char root[65];
      std::snprintf(root, sizeof root, "%064x", i);
      s += std::string(root) + " 1\n";
    }
    return s;
  }();
  const std::vector<Case> cases = {
      {"", "line 1: not a teetrain-crl-state/1 file"},
      {"teetrain-crl-state/2\n", "line 1: not a teetrain-crl-state/1 file"},
      {kHeader + kRootA + " 1", "line 2: no newline at its end"},
      {kHeader + kRootA + " 1\r\n", "line 2: the CRL number is not"},
      {kHeader + std::string(64, 'A') + " 1\n", "line 2: expected '<64 lowercase hex digits> <number>'"},
      {kHeader + std::string(63, 'a') + " 1\n", "line 2: expected"},
      {kHeader + kRootA + "\n", "line 2: expected"},
      {kHeader + kRootA + "  1\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " 01\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " +1\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " -1\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " 9223372036854775808\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " 99999999999999999999999\n", "line 2: the CRL number is not"},
      {kHeader + kRootA + " 1 \n", "line 2: the CRL number is not"},
      {kHeader + kRootA + std::string(" 1\0\n", 4), "line 2: the CRL number is not"},
      {kHeader + kRootA + " 1\n" + kRootA + " 2\n", "line 3: vendor roots out of order or repeated"},
      {kHeader + kRootA + " 1\n" + kRootB + " 2\n", "line 3: vendor roots out of order or repeated"},
      {kHeader + "\n", "line 2: expected"},
      {many, "line 258: more than 256 vendor roots"},
      {kHeader + std::string(kMaxCrlStateBytes, 'a'), "bytes"},
  };
  for (const Case& c : cases) {
    try {
      parse_crl_state(c.text, "CRL state 'x'");
      ADD_FAILURE() << "accepted: " << c.text.substr(0, 80);
    } catch (const IntegrityError& e) {
      EXPECT_NE(std::string(e.what()).find("CRL state 'x' is malformed ("), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.why), std::string::npos) << e.what();
    }
  }
}

// Every way of damaging a valid state ends in success or IntegrityError, never a crash or another
// exception; what parses encodes back to the same bytes (the format is canonical).
TEST(CrlStateFuzz, ParseSurvivesDamagedFiles) {
  const std::string valid = encode_crl_state({{kRootA, 12}, {kRootB, 345}});
  int accepted = 0, refused = 0;
  for (const auto& in : tt::testing::fuzz_inputs(valid, {})) {
    const int rc = tt::testing::run_parser(
        [&] { EXPECT_EQ(encode_crl_state(parse_crl_state(in.bytes, "CRL state")), in.bytes) << in.what; },
        in.what);
    EXPECT_TRUE(rc == 0 || rc == 3) << in.what << ": exit " << rc;
    (rc == 0 ? accepted : refused)++;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // a flipped digit of a number is still a number
}

class RememberCrl : public ::testing::Test {
 protected:
  tt::testing::TempDir dir_;
  fs::path vendor_ = dir_ / "vendor";
  fs::path state_ = dir_ / "rank.crl-state";

  tee::ProvisionReport provision(bool renew, std::vector<int> revoke = {}) {
    tee::ProvisionOptions o;
    o.dir = vendor_;
    o.devices = 2;
    o.revoke = std::move(revoke);
    o.renew_crl = renew;
    return tee::provision(o);
  }
  tee::TrustAnchor anchor() const {
    const fs::path root = tee::vendor_root_path(vendor_);
    return tee::TrustAnchor::load(root, tee::TrustAnchor::crl_beside(root));
  }
  std::string root_hex() const { return tee::to_hex(tee::sha256(anchor().root().der())); }
};

TEST_F(RememberCrl, RefusesAnOlderListNamingRankListAndBothNumbers) {
  provision(false);
  const tee::TrustAnchor list1 = anchor();
  remember_crl(state_, list1, 3);
  EXPECT_EQ(parse_crl_state(tt::testing::read_bytes(state_), "s").at(root_hex()), 1u);
  provision(false, {1});
  remember_crl(state_, anchor(), 3);  // list 2, newer: recorded
  EXPECT_EQ(parse_crl_state(tt::testing::read_bytes(state_), "s").at(root_hex()), 2u);
  remember_crl(state_, anchor(), 3);  // the same list again: accepted
  try {
    remember_crl(state_, list1, 3);
    FAIL() << "list 1 accepted after list 2";
  } catch (const IntegrityError& e) {
    EXPECT_EQ(std::string(e.what()),
              "rank 3: revocation list '" +
                  tee::TrustAnchor::crl_beside(tee::vendor_root_path(vendor_)).string() +
                  "' is number 1, older than number 2 this rank accepted before (CRL state '" +
                  state_.string() + "'): an older list revokes less; put the vendor's current list back");
  }
  EXPECT_EQ(parse_crl_state(tt::testing::read_bytes(state_), "s").at(root_hex()), 2u);  // unchanged
}

TEST_F(RememberCrl, KeepsOtherRootsAndNeedsAnExistingDirectory) {
  tt::testing::write_bytes(state_, encode_crl_state({{kRootA, 99}}));
  provision(false);
  remember_crl(state_, anchor(), 0);
  const CrlState both = parse_crl_state(tt::testing::read_bytes(state_), "s");
  EXPECT_EQ(both.at(kRootA), 99u);
  EXPECT_EQ(both.at(root_hex()), 1u);
  EXPECT_THROW(remember_crl(dir_ / "missing" / "state", anchor(), 0), InputError);
  // An anchor without a list has nothing to remember.
  const tee::TrustAnchor without = tee::TrustAnchor::load_without_revocation(tee::vendor_root_path(vendor_));
  remember_crl(dir_ / "untouched", without, 0);
  EXPECT_FALSE(fs::exists(dir_ / "untouched"));
  // A damaged state is refused, not overwritten.
  tt::testing::write_bytes(state_, kHeader + "zz 1\n");
  EXPECT_THROW(remember_crl(state_, anchor(), 0), IntegrityError);
  EXPECT_EQ(tt::testing::read_bytes(state_), kHeader + "zz 1\n");
  EXPECT_EQ(crl_state_beside("v/device_1.pem"), fs::path("v/device_1.pem.crl-state"));
}

}  // namespace
}  // namespace tt
