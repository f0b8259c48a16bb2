// SHA-256, HMAC-SHA256 and HKDF-SHA256 against published vectors; the keys typed by purpose and the
// named derivations between them.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "tee/crypto/hkdf.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/ratchet.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/identity/traffic_keys.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

using test::hex;

std::vector<std::uint8_t> iota_bytes(std::uint8_t first, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// FIPS 180-2 Appendix B.1 ("abc") and the empty message.
TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(to_hex(sha256(std::string_view("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256(std::string_view(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, IncrementalMatchesOneShot) {
  const auto data = test::pattern(100000);
  Sha256 h;
  for (std::size_t off = 0; off < data.size(); off += 777)
    h.update(ByteView(data).subspan(off, std::min<std::size_t>(777, data.size() - off)));
  EXPECT_EQ(h.finish(), sha256(data));
  EXPECT_THROW(h.finish(), CryptoError);
}

// RFC 4231 test case 2.
TEST(HmacSha256, Rfc4231Case2) {
  EXPECT_EQ(to_hex(hmac_sha256(bytes_of(std::string_view("Jefe")),
                               bytes_of(std::string_view("what do ya want for nothing?")))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

struct HkdfCase {
  std::vector<std::uint8_t> ikm, salt, info;
  std::size_t length;
  std::string prk, okm;
};

// RFC 5869 Appendix A.1-A.3 (the SHA-256 cases).
std::vector<HkdfCase> rfc5869_cases() {
  return {
      {std::vector<std::uint8_t>(22, 0x0b), iota_bytes(0x00, 13), iota_bytes(0xf0, 10), 42,
       "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
       "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
      {iota_bytes(0x00, 80), iota_bytes(0x60, 80), iota_bytes(0xb0, 80), 82,
       "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
       "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09"
       "da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"},
      {std::vector<std::uint8_t>(22, 0x0b),
       {},
       {},
       42,
       "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
       "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
  };
}

TEST(Hkdf, Rfc5869Cases1To3) {
  int n = 1;
  for (const HkdfCase& c : rfc5869_cases()) {
    SCOPED_TRACE("RFC 5869 test case " + std::to_string(n++));
    const SecretBytes prk = hkdf_extract(c.salt, c.ikm);
    EXPECT_EQ(to_hex(prk.view()), c.prk);
    EXPECT_EQ(to_hex(hkdf_expand(prk.view(), c.info, c.length).view()), c.okm);
    EXPECT_EQ(to_hex(hkdf(c.ikm, c.salt, c.info, c.length).view()), c.okm);
  }
}

TEST(Hkdf, RejectsBadLengths) {
  const SecretBytes prk = SecretBytes::random(32);
  EXPECT_THROW(hkdf_expand(prk.view(), {}, 0), std::invalid_argument);
  EXPECT_THROW(hkdf_expand(prk.view(), {}, 255 * 32 + 1), std::invalid_argument);
  EXPECT_THROW(hkdf_expand(SecretBytes::random(16).view(), {}, 32), std::invalid_argument);
  EXPECT_EQ(hkdf_expand(prk.view(), {}, 255 * 32).size(), 255u * 32);
}

// A key for one purpose never stands in for another: no conversion between purposes, none from raw
// bytes, and a sealed file takes only the at-rest keys.
template <typename A, typename B>
constexpr bool interchangeable = std::is_convertible_v<const A&, B> || std::is_convertible_v<const B&, A> ||
                                 std::is_constructible_v<B, const A&> || std::is_constructible_v<A, const B&>;
static_assert(!interchangeable<DatasetKey, CheckpointKey>);
static_assert(!std::is_convertible_v<DatasetKey, CheckpointKey>);
static_assert(!interchangeable<MasterKey, DatasetKey>);
static_assert(!interchangeable<MasterKey, CheckpointKey>);
static_assert(!interchangeable<MasterKey, FreshnessKey>);
static_assert(!interchangeable<MasterKey, LinkSecret>);
static_assert(!interchangeable<MasterKey, GroupSecret>);
static_assert(!interchangeable<LinkSecret, GroupSecret>);
static_assert(!interchangeable<DatasetKey, FreshnessKey>);
static_assert(!interchangeable<CheckpointKey, FreshnessKey>);
static_assert(!interchangeable<DatasetKey, LinkSecret>);
static_assert(!interchangeable<CheckpointKey, GroupSecret>);
static_assert(!std::is_convertible_v<SecretBytes, MasterKey>, "wrapping raw bytes is explicit");
static_assert(!std::is_convertible_v<SecretBytes, DatasetKey>, "wrapping raw bytes is explicit");
static_assert(std::is_convertible_v<const DatasetKey&, AtRestKey>);
static_assert(std::is_convertible_v<const CheckpointKey&, AtRestKey>);
static_assert(std::is_convertible_v<const FreshnessKey&, AtRestKey>);
static_assert(!std::is_constructible_v<AtRestKey, const MasterKey&>, "the master key seals nothing");
static_assert(!std::is_constructible_v<AtRestKey, const LinkSecret&>);
static_assert(!std::is_constructible_v<AtRestKey, const GroupSecret&>);
static_assert(!std::is_constructible_v<AtRestKey, const SecretBytes&>);

// The ring's traffic secrets (traffic_keys.h): each its own purpose, reached only by its derivation.
static_assert(!interchangeable<LinkSecret, StreamSecret>, "a link secret is not a stream's secret");
static_assert(!interchangeable<GroupSecret, GroupTrafficSecret>);
static_assert(!interchangeable<GroupTrafficSecret, StreamSecret>);
static_assert(!interchangeable<StreamSecret, TrafficKey>, "an epoch's key is not the secret it came from");
static_assert(!interchangeable<LinkSecret, ReleaseKey>);
static_assert(!interchangeable<ReleaseKey, TrafficKey>);
static_assert(!interchangeable<ReleaseKey, StreamSecret>);
static_assert(!interchangeable<GroupSecret, StreamSecret>);
static_assert(!interchangeable<DatasetKey, StreamSecret>);
static_assert(!std::is_convertible_v<SecretBytes, StreamSecret>, "wrapping raw bytes is explicit");
static_assert(!std::is_convertible_v<SecretBytes, GroupTrafficSecret>, "wrapping raw bytes is explicit");
static_assert(!std::is_constructible_v<AtRestKey, const StreamSecret&>);
static_assert(!std::is_constructible_v<AtRestKey, const TrafficKey&>);
static_assert(!std::is_constructible_v<AtRestKey, const ReleaseKey&>);
// A ratchet starts from a stream's secret and nothing else.
static_assert(std::is_constructible_v<KeyRatchet, StreamSecret, Cipher>);
static_assert(!std::is_constructible_v<KeyRatchet, SecretBytes, Cipher>);
static_assert(!std::is_constructible_v<KeyRatchet, LinkSecret, Cipher>);
static_assert(!std::is_constructible_v<KeyRatchet, GroupTrafficSecret, Cipher>);
static_assert(!std::is_constructible_v<KeyRatchet, TrafficKey, Cipher>);
// Each derivation takes only its own input.
static_assert(!std::is_invocable_v<decltype(&derive_group_stream_secret), const GroupSecret&, std::uint32_t>);
static_assert(!std::is_invocable_v<decltype(&derive_link_stream_secret), const GroupSecret&, std::uint32_t,
                                   std::uint32_t>);
static_assert(!std::is_invocable_v<decltype(&derive_group_traffic_secret), const LinkSecret&>);
static_assert(!std::is_invocable_v<decltype(&derive_release_key), const GroupSecret&, std::uint32_t,
                                   std::uint32_t, std::uint64_t, std::string_view>);
static_assert(
    !std::is_invocable_v<decltype(&key_confirmation), const StreamSecret&, std::uint32_t, std::uint32_t>);

// The derivations are the documented HKDFs (sealed data and checkpoints written before keys had types
// must still open), and each purpose gets its own key.
TEST(PurposeKeys, DerivationsAreTheDocumentedHkdfs) {
  const MasterKey master = MasterKey::random();
  auto expect = [&](std::string_view info) { return hkdf(master.view(), {}, bytes_of(info), 32); };
  EXPECT_TRUE(derive_dataset_key(master).secret() == expect("teetrain dataset"));
  EXPECT_TRUE(derive_checkpoint_key(master).secret() == expect("teetrain checkpoint"));
  EXPECT_TRUE(derive_freshness_key(master).secret() == expect("teetrain freshness"));
  EXPECT_FALSE(derive_dataset_key(master).secret() == derive_checkpoint_key(master).secret());
  EXPECT_THROW(derive_checkpoint_key(MasterKey{}), InputError);
}

// prefix || be32(a) || be32(b) || suffix: the traffic derivations' info, written out independently.
std::vector<std::uint8_t> info_of(std::string_view prefix, std::uint32_t a, std::uint32_t b,
                                  const std::vector<std::uint8_t>& suffix = {}) {
  std::vector<std::uint8_t> info(prefix.begin(), prefix.end());
  for (std::uint32_t v : {a, b})
    for (int shift = 24; shift >= 0; shift -= 8) info.push_back(static_cast<std::uint8_t>(v >> shift));
  info.insert(info.end(), suffix.begin(), suffix.end());
  return info;
}

// The traffic derivations are the HKDF-Expands sealed messages and handshakes have always used (their
// fixtures must keep opening), and distinct inputs give distinct secrets.
TEST(TrafficKeys, DerivationsAreTheDocumentedHkdfs) {
  const LinkSecret link = LinkSecret::random();
  const GroupSecret group = GroupSecret::random();
  auto expand = [](const auto& key, const std::vector<std::uint8_t>& info, std::size_t n = 32) {
    return hkdf_expand(key.view(), info, n);
  };
  EXPECT_TRUE(derive_link_stream_secret(link, 1, 2).secret() ==
              expand(link, info_of("teetrain traffic v1", 1, 2)));
  EXPECT_FALSE(derive_link_stream_secret(link, 1, 2) == derive_link_stream_secret(link, 2, 1));
  const GroupTrafficSecret traffic = derive_group_traffic_secret(group);
  EXPECT_TRUE(traffic.secret() == expand(group, info_of("teetrain group traffic v1", 0, 0)));
  EXPECT_TRUE(derive_group_stream_secret(traffic, 3).secret() ==
              expand(traffic, info_of("teetrain group stream v1", 3, 0xffffffff)));
  EXPECT_TRUE(derive_pair_stream_secret(traffic, 3, 1).secret() ==
              expand(traffic, info_of("teetrain pair stream v1", 3, 1)));
  const auto id = derive_run_id(group);
  const SecretBytes id_bytes = expand(group, info_of("teetrain run id v1", 0, 0), 16);
  EXPECT_TRUE(std::equal(id.begin(), id.end(), id_bytes.data()));
  const std::vector<std::uint8_t> suffix = {0,   0,   0,   0,   0,   0,   0,   7,  'g',
                                            'r', 'o', 'u', 'p', ' ', 'k', 'e', 'y'};
  EXPECT_EQ(release_info(0, 1, 7, "group key"), info_of("teetrain release v1", 0, 1, suffix));
  EXPECT_TRUE(derive_release_key(link, 0, 1, 7, "group key").secret() ==
              expand(link, info_of("teetrain release v1", 0, 1, suffix)));
  EXPECT_FALSE(derive_release_key(link, 0, 1, 8, "group key") ==
               derive_release_key(link, 0, 1, 7, "group key"));
  const SecretBytes confirm = expand(link, info_of("teetrain key confirm v1", 0, 1));
  const Sha256Digest proof = key_confirmation(link, 0, 1);
  EXPECT_TRUE(std::equal(proof.begin(), proof.end(), confirm.data()));
  EXPECT_EQ(key_confirmation(LinkSecret{}, 0, 1), Sha256Digest{}) << "no secret: zeros, which never confirm";
}

}  // namespace
}  // namespace tt::tee
