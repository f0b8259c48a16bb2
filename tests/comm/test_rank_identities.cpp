// One device identity per rank (comm/secure/rank_identities.h): records round-trip through their wire form
// and any bytes decode without a crash (a peer's status is untrusted); two ranks with the same key or
// the same serial conflict, naming both; a rank described two ways conflicts; an untrusted reporter
// is heard only about itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "comm/secure/rank_identities.h"
#include "tests/common/fuzz.h"

namespace tt::comm {
namespace {

IdentityRecord record(int rank, std::uint8_t key, const std::string& serial) {
  tee::PublicKey k{};
  k.fill(key);
  IdentityRecord r;
  r.rank = rank;
  r.device_key = k;
  if (serial.empty()) return r;
  r.has_serial = true;
  r.serial_digest = tee::sha256(serial);
  r.serial_hex = serial.substr(0, 16);
  return r;
}

std::vector<std::byte> wire(const IdentityRecord& r) {
  std::vector<std::byte> out(kIdentityRecordBytes);
  encode_identity(r, out);
  return out;
}

TEST(RankIdentities, RecordsRoundTrip) {
  const IdentityRecord r = record(7, 0xab, "0123456789abcdef0123");
  const IdentityRecord back = decode_identity(wire(r));
  EXPECT_EQ(back.rank, 7);
  EXPECT_EQ(back.device_key, r.device_key);
  EXPECT_TRUE(back.has_serial);
  EXPECT_EQ(back.serial_digest, r.serial_digest);
  EXPECT_EQ(back.serial_hex, "0123456789abcdef");
  EXPECT_EQ(decode_identity(wire(IdentityRecord{})).rank, -1);  // an unused slot stays unused
}

TEST(RankIdentities, AnyBytesDecodeWithoutACrash) {
  const auto valid = wire(record(3, 0x11, "feedface"));
  const std::string text(reinterpret_cast<const char*>(valid.data()), valid.size());
  for (const auto& in : testing::fuzz_inputs(text, {})) {
    // The decoder reads a fixed-size slot: shorter inputs are padded, as the status block always is.
    std::vector<std::byte> slot(kIdentityRecordBytes);
    std::memcpy(slot.data(), in.bytes.data(), std::min(in.bytes.size(), slot.size()));
    const int rc = testing::run_parser([&] { (void)decode_identity(slot); }, in.what);
    EXPECT_EQ(rc, 0) << in.what;
    EXPECT_GE(decode_identity(slot).rank, -1) << in.what;
    EXPECT_LE(decode_identity(slot).serial_hex.size(), 16u) << in.what;
  }
}

TEST(RankIdentities, SharedKeyOrSerialConflictsNamingBothRanks) {
  const auto same = identity_conflicts({{0, true, {record(0, 1, "aa"), record(1, 1, "aa")}},
                                        {1, true, {record(1, 1, "aa"), record(0, 1, "aa")}}});
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].subject, 1);
  EXPECT_NE(same[0].reason.find("the same device identity as rank 0"), std::string::npos) << same[0].reason;
  EXPECT_NE(same[0].reason.find("{rank}"), std::string::npos);
  EXPECT_EQ(same[0].reporters, (std::vector<int>{0, 1}));

  const auto key = identity_conflicts({{0, true, {record(0, 1, "aa"), record(2, 1, "bb")}}});
  ASSERT_EQ(key.size(), 1u);
  EXPECT_EQ(key[0].subject, 2);
  EXPECT_NE(key[0].reason.find("the same device key as rank 0"), std::string::npos) << key[0].reason;

  const auto serial = identity_conflicts({{0, true, {record(0, 1, "aa"), record(1, 2, "aa")}}});
  ASSERT_EQ(serial.size(), 1u);
  EXPECT_NE(serial[0].reason.find("the same certificate serial as rank 0"), std::string::npos);

  // Distinct identities, told the same way by everyone, pass; --attestation none has no serials.
  EXPECT_TRUE(identity_conflicts({{0, true, {record(0, 1, "aa"), record(1, 2, "bb")}},
                                  {1, true, {record(1, 2, "bb"), record(0, 1, "aa")}}})
                  .empty());
  EXPECT_TRUE(identity_conflicts({{0, true, {record(0, 1, ""), record(1, 2, "")}}}).empty());
}

TEST(RankIdentities, ARankToldTwoWaysConflicts) {
  // Rank 1 claims one identity for itself, but rank 0 verified another in its evidence.
  const auto c = identity_conflicts({{0, true, {record(0, 1, "aa"), record(1, 3, "cc")}},
                                     {1, true, {record(1, 2, "bb"), record(0, 1, "aa")}}});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].subject, 1);
  EXPECT_NE(c[0].reason.find("presented different device identities"), std::string::npos) << c[0].reason;
}

TEST(RankIdentities, AnUntrustedReporterIsHeardOnlyAboutItself) {
  // Rank 2 (a minority measurement) claims rank 1 shares rank 0's key: ignored. Its own record counts.
  EXPECT_TRUE(identity_conflicts({{0, true, {record(0, 1, "aa"), record(1, 2, "bb")}},
                                  {2, false, {record(2, 3, "cc"), record(1, 1, "aa")}}})
                  .empty());
  const auto self = identity_conflicts({{0, true, {record(0, 1, "aa")}}, {2, false, {record(2, 1, "aa")}}});
  ASSERT_EQ(self.size(), 1u);
  EXPECT_EQ(self[0].subject, 2);
}

}  // namespace
}  // namespace tt::comm
