// SecretBytes: ownership, wiping, no accidental copies, fingerprint.
#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>

#include "tee/secure_bytes.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

TEST(SecretBytes, NotCopyableOnlyMovable) {
  static_assert(!std::is_copy_constructible_v<SecretBytes>);
  static_assert(!std::is_copy_assignable_v<SecretBytes>);
  static_assert(std::is_nothrow_move_constructible_v<SecretBytes>);
  static_assert(std::is_nothrow_move_assignable_v<SecretBytes>);
}

TEST(SecretBytes, MoveLeavesNoCopyBehind) {
  SecretBytes a = SecretBytes::random(32);
  const std::uint8_t* buf = a.data();
  const std::vector<std::uint8_t> before(a.view().begin(), a.view().end());
  SecretBytes b(std::move(a));
  // The moved-from object owns nothing: the key bytes exist only in `b` (the same buffer).
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): checking the moved-from state is the point
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), buf);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), b.view().begin()));

  SecretBytes c = SecretBytes::random(16);
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.size(), 32u);
  EXPECT_EQ(c.data(), buf);
}

TEST(SecretBytes, WipeZeroesInPlace) {
  SecretBytes a = SecretBytes::random(64);
  ASSERT_FALSE(std::all_of(a.view().begin(), a.view().end(), [](std::uint8_t x) { return x == 0; }));
  const std::uint8_t* buf = a.data();
  a.wipe();
  EXPECT_EQ(a.data(), buf);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_TRUE(std::all_of(a.view().begin(), a.view().end(), [](std::uint8_t x) { return x == 0; }));
  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.data(), nullptr);
}

TEST(SecretBytes, CloneAndCompare) {
  const SecretBytes a = SecretBytes::random(32);
  SecretBytes b = a.clone();
  EXPECT_NE(a.data(), b.data());
  EXPECT_TRUE(a == b);
  b.data()[5] ^= 1;
  EXPECT_FALSE(a == b);
}

TEST(SecretBytes, FingerprintIsStableShortHexAndNotTheKey) {
  const auto key = from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  const SecretBytes a{ByteView(key)};
  const std::string fp = a.fingerprint();
  EXPECT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp, a.clone().fingerprint());
  EXPECT_EQ(fp, to_hex(key_fingerprint(key)));
  EXPECT_EQ(to_hex(key).find(fp), std::string::npos);
  EXPECT_NE(fp, SecretBytes::random(32).fingerprint());
}

TEST(SecretBytes, ZeroSizeIsEmpty) {
  SecretBytes e(0);
  EXPECT_TRUE(e.empty());
  e.wipe();
  e.clear();
}

}  // namespace
}  // namespace tt::tee
