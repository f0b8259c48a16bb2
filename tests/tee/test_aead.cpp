// AEAD: known-answer vectors for every cipher, tamper detection, in-place operation, context reuse (on
// the nonce-taking AEAD inside tee/), and the public API that seals only at stream positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>

#include "tee/crypto/aead.h"
#include "tee/detail/nonce.h"
#include "tee/errors.h"
#include "tests/common/positions.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

using test::hex;
// The vectors and tamper tests need nonces of their own choosing: they test the AEAD inside tee/.
using Aead = detail::NonceAead;
using detail::Nonce;

struct Kat {
  const char* name;
  Cipher cipher;
  const char* key;
  const char* nonce;
  const char* aad;
  const char* plaintext;
  const char* ciphertext;
  const char* tag;
};

// AES-GCM vectors: McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005,
// Appendix B test cases 1, 2, 4 (AES-128) and 13, 14, 16 (AES-256), as used by NIST's GCM
// validation; cases 4 and 16 carry 20 bytes of AAD and a 60-byte (non-block-multiple) plaintext.
// ChaCha20-Poly1305: RFC 8439 §2.8.2.
constexpr const char* kGcmP60 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5"
    "aa0de657ba637b39";
constexpr const char* kGcmAad = "feedfacedeadbeeffeedfacedeadbeefabaddad2";

const Kat kKats[] = {
    {"GCM TC1", Cipher::Aes128Gcm, "00000000000000000000000000000000", "000000000000000000000000", "", "", "",
     "58e2fccefa7e3061367f1d57a4e7455a"},
    {"GCM TC2", Cipher::Aes128Gcm, "00000000000000000000000000000000", "000000000000000000000000", "",
     "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78",
     "ab6e47d42cec13bdf53a67b21257bddf"},
    {"GCM TC4", Cipher::Aes128Gcm, "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", kGcmAad,
     kGcmP60,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b3"
     "9"
     "6a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {"GCM TC13", Cipher::Aes256Gcm, "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"GCM TC14", Cipher::Aes256Gcm, "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18",
     "d0d1c8a799996bf0265b98b5d48ab919"},
    {"GCM TC16", Cipher::Aes256Gcm, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", kGcmAad, kGcmP60,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6"
     "3"
     "93ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {"RFC 8439 2.8.2", Cipher::ChaCha20Poly1305,
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f", "070000004041424344454647",
     "50515253c0c1c2c3c4c5c6c7",
     "4c616469657320616e642047656e746c656d656e206f662074686520636c617373206f66202739393a204966204920636f756c6"
     "4"
     "206f6666657220796f75206f6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73637265656e20776"
     "f"
     "756c642062652069742e",
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0"
     "a"
     "9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9"
     "d"
     "e576d26586cec64b6116",
     "1ae10b594f09e26a7e902ecbd0600691"},
};

Nonce nonce_from_hex(const char* h) {
  return Nonce{test::hex_array<12>(h)};
}

TEST(Aead, KnownAnswerVectors) {
  for (const Kat& k : kKats) {
    SCOPED_TRACE(k.name);
    const auto key = hex(k.key), aad = hex(k.aad), pt = hex(k.plaintext);
    Aead aead(k.cipher, key);
    const Nonce nonce = nonce_from_hex(k.nonce);
    std::vector<std::uint8_t> ct(pt.size());
    Tag tag{};
    aead.seal(nonce, aad, pt, ct, tag);
    EXPECT_EQ(to_hex(ct), k.ciphertext);
    EXPECT_EQ(to_hex(tag), k.tag);

    std::vector<std::uint8_t> back(ct.size());
    ASSERT_TRUE(aead.try_open(nonce, aad, ct, tag, back));
    EXPECT_EQ(back, pt);
    // Twice more: the contexts are reused, only the nonce is reset per message.
    aead.seal(nonce, aad, pt, ct, tag);
    EXPECT_EQ(to_hex(tag), k.tag);
    ASSERT_TRUE(aead.try_open(nonce, aad, ct, tag, back));
  }
}

TEST(Aead, CipherNames) {
  for (Cipher c : {Cipher::Aes256Gcm, Cipher::Aes128Gcm, Cipher::ChaCha20Poly1305})
    EXPECT_EQ(parse_cipher(cipher_name(c)), c);
  EXPECT_EQ(parse_cipher("AES-256-GCM"), Cipher::Aes256Gcm);
  EXPECT_FALSE(parse_cipher("aes-256-cbc").has_value());
  EXPECT_EQ(cipher_key_size(Cipher::Aes128Gcm), 16u);
  EXPECT_EQ(cipher_key_size(Cipher::Aes256Gcm), 32u);
  EXPECT_EQ(cipher_key_size(Cipher::ChaCha20Poly1305), 32u);
}

TEST(Aead, RejectsWrongKeySizeAndBadBuffers) {
  EXPECT_THROW(Aead(Cipher::Aes256Gcm, std::vector<std::uint8_t>(16)), std::invalid_argument);
  Aead aead(Cipher::Aes256Gcm, std::vector<std::uint8_t>(32));
  std::vector<std::uint8_t> buf(64);
  Tag tag{};
  EXPECT_THROW(aead.seal(Nonce{}, {}, ByteView(buf).first(10), MutableByteView(buf).subspan(20, 11), tag),
               std::invalid_argument);
  // Shifted overlap would corrupt the stream; refused.
  EXPECT_THROW(aead.seal(Nonce{}, {}, ByteView(buf).first(32), MutableByteView(buf).subspan(1, 32), tag),
               std::invalid_argument);
}

class AeadPerCipher : public ::testing::TestWithParam<Cipher> {
 protected:
  Aead make() { return Aead(GetParam(), SecretBytes::random(cipher_key_size(GetParam())).view()); }
};

TEST_P(AeadPerCipher, TamperAnyByteFailsToOpen) {
  const SecretBytes key = SecretBytes::random(cipher_key_size(GetParam()));
  Aead aead(GetParam(), key.view());
  const auto pt = test::pattern(37);
  auto aad = test::pattern(13, 7);
  Nonce nonce = Nonce::make(3, 41);
  std::vector<std::uint8_t> ct(pt.size()), out(pt.size());
  Tag tag{};
  aead.seal(nonce, aad, pt, ct, tag);
  ASSERT_TRUE(aead.try_open(nonce, aad, ct, tag, out));

  auto expect_fail = [&](const char* what) {
    SCOPED_TRACE(what);
    std::fill(out.begin(), out.end(), std::uint8_t{0xAA});
    EXPECT_FALSE(aead.try_open(nonce, aad, ct, tag, out));
    // Unauthenticated plaintext never reaches the caller.
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0; }));
  };
  for (std::size_t i = 0; i < ct.size(); ++i) {
    ct[i] ^= 0x01;
    expect_fail("ciphertext");
    ct[i] ^= 0x01;
  }
  for (std::size_t i = 0; i < tag.size(); ++i) {
    tag[i] ^= 0x80;
    expect_fail("tag");
    tag[i] ^= 0x80;
  }
  for (std::size_t i = 0; i < aad.size(); ++i) {
    aad[i] ^= 0x10;
    expect_fail("aad");
    aad[i] ^= 0x10;
  }
  for (std::size_t i = 0; i < nonce.bytes.size(); ++i) {
    nonce.bytes[i] ^= 0x04;
    expect_fail("nonce");
    nonce.bytes[i] ^= 0x04;
  }
  // Shorter AAD (a dropped field) and a different key.
  const auto short_aad = ByteView(aad).first(aad.size() - 1);
  EXPECT_FALSE(aead.try_open(nonce, short_aad, ct, tag, out));
  Aead other = make();
  EXPECT_FALSE(other.try_open(nonce, aad, ct, tag, out));
  EXPECT_THROW(other.open(nonce, aad, ct, tag, out, "test message"), IntegrityError);
  // And the untouched message still opens after all those failures (no sticky error state).
  ASSERT_TRUE(aead.try_open(nonce, aad, ct, tag, out));
  EXPECT_EQ(out, pt);
}

TEST_P(AeadPerCipher, InPlaceMatchesOutOfPlace) {
  Aead aead = make();
  for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 4096u, 100003u}) {
    SCOPED_TRACE(n);
    const auto pt = test::pattern(n);
    const Nonce nonce = Nonce::make(1, n);
    std::vector<std::uint8_t> ct(n);
    Tag tag{}, tag2{};
    aead.seal(nonce, {}, pt, ct, tag);
    std::vector<std::uint8_t> buf = pt;
    aead.seal(nonce, {}, buf, buf, tag2);
    EXPECT_EQ(buf, ct);
    EXPECT_EQ(tag, tag2);
    ASSERT_TRUE(aead.try_open(nonce, {}, buf, tag, buf));
    EXPECT_EQ(buf, pt);
  }
}

TEST_P(AeadPerCipher, AppendedTagWireFormat) {
  Aead aead = make();
  const auto pt = test::pattern(1000);
  const auto aad = test::pattern(24, 3);
  std::vector<std::uint8_t> sealed(pt.size() + kTagSize), out(pt.size());
  aead.seal_append_tag(Nonce::make(0, 0), aad, pt, sealed);
  ASSERT_TRUE(aead.try_open_with_tag(Nonce::make(0, 0), aad, sealed, out));
  EXPECT_EQ(out, pt);
  // Short message (a truncated transfer) is refused.
  EXPECT_FALSE(aead.try_open_with_tag(Nonce::make(0, 0), aad, ByteView(sealed).first(10), out));
  EXPECT_FALSE(aead.try_open_with_tag(Nonce::make(0, 1), aad, sealed, out));
}

TEST_P(AeadPerCipher, SeparateObjectsInteroperate) {
  // Sender and receiver each build their own tee::Aead from the same key, as two ranks do, and meet at
  // the positions of one counter.
  const SecretBytes key = SecretBytes::random(cipher_key_size(GetParam()));
  tee::Aead tx(GetParam(), key.view()), rx(GetParam(), key.view());
  MessageCounter seq(7);
  for (int m = 0; m < 50; ++m) {
    const auto pt = test::pattern(static_cast<std::size_t>(m * 97), static_cast<std::uint8_t>(m));
    const StreamPosition at = seq.next();
    std::vector<std::uint8_t> ct(pt.size()), out(pt.size());
    Tag tag{};
    tx.seal(at, {}, pt, ct, tag);
    rx.open(at, {}, ct, tag, out);
    EXPECT_EQ(out, pt);
  }
}

// The public AEAD seals at a position exactly as the inner one at that position's nonce (so wire and
// file formats did not change), and a sealing stream pairs with an opening stream message by message.
TEST_P(AeadPerCipher, StreamsOwnTheirPositions) {
  const SecretBytes key = SecretBytes::random(cipher_key_size(GetParam()));
  tee::Aead pub(GetParam(), key.view());
  Aead raw(GetParam(), key.view());
  const auto pt = test::pattern(77);
  const auto aad = test::pattern(9, 3);
  const StreamPosition at = tt::testing::position_at(3, 41);
  std::vector<std::uint8_t> a(pt.size() + kTagSize), b(pt.size() + kTagSize);
  pub.seal_append_tag(at, aad, pt, a);
  raw.seal_append_tag(Nonce::make(3, 41), aad, pt, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(detail::nonce_at(at), Nonce::make(3, 41));

  SealingStream tx(GetParam(), key.view(), 5);
  OpeningStream rx(GetParam(), key.view(), 5);
  std::vector<std::vector<std::uint8_t>> sealed;
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(tx.next_counter(), static_cast<std::uint64_t>(m));
    sealed.emplace_back(pt.size() + kTagSize);
    tx.seal(aad, pt, sealed.back());
  }
  EXPECT_NE(sealed[0], sealed[1]) << "two messages of one stream must not share a position";
  std::vector<std::uint8_t> out(pt.size());
  ASSERT_TRUE(rx.try_open(aad, sealed[0], out));
  EXPECT_EQ(out, pt);
  EXPECT_FALSE(rx.try_open(aad, sealed[0], out)) << "a replayed message must not open";
  // The failed open spent position 1 (sealed[1] is lost with it): the stream goes on at position 2.
  ASSERT_TRUE(rx.try_open(aad, sealed[2], out));
  EXPECT_EQ(rx.next_counter(), 3u);
}

// A position cannot be made up: only a MessageCounter mints one.
static_assert(!std::is_default_constructible_v<StreamPosition>);
static_assert(!std::is_constructible_v<StreamPosition, std::uint32_t, std::uint64_t>);
static_assert(!std::is_convertible_v<std::uint64_t, StreamPosition>);

INSTANTIATE_TEST_SUITE_P(AllCiphers, AeadPerCipher,
                         ::testing::Values(Cipher::Aes256Gcm, Cipher::Aes128Gcm, Cipher::ChaCha20Poly1305),
                         [](const auto& p) {
                           std::string s(cipher_name(p.param));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// A message larger than one EVP update (1 GiB): the chunked loop must keep the stream in order.
// GCM's keystream at a position does not depend on the message length, so the first bytes must
// match a small message's ciphertext, and the whole must round-trip.
TEST(Aead, MessageLargerThanOneUpdate) {
  const std::size_t n = (std::size_t{1} << 30) + 33;
  Aead aead(Cipher::Aes128Gcm, SecretBytes::random(16).view());
  std::vector<std::uint8_t> buf(n);
  for (std::size_t i = 0; i < n; i += 4096) buf[i] = static_cast<std::uint8_t>(i >> 12);
  buf[n - 1] = 0x5a;
  const std::vector<std::uint8_t> head(buf.begin(), buf.begin() + 64);
  const Nonce nonce = Nonce::make(9, 9);
  Tag tag{};
  aead.seal(nonce, {}, buf, buf, tag);
  std::vector<std::uint8_t> small(64);
  Tag small_tag{};
  aead.seal(nonce, {}, head, small, small_tag);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), buf.begin()));
  ASSERT_TRUE(aead.try_open(nonce, {}, buf, tag, buf));
  EXPECT_EQ(buf[n - 1], 0x5a);
  EXPECT_EQ(buf[4096], 1);
  EXPECT_EQ(buf[std::size_t{1} << 30], static_cast<std::uint8_t>((std::size_t{1} << 30) >> 12));
}

}  // namespace
}  // namespace tt::tee
