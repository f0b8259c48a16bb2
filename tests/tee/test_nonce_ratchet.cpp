// Deterministic nonces (stream positions and their layout) and the key ratchet.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include "tee/crypto/hkdf.h"
#include "tee/crypto/ratchet.h"
#include "tee/crypto/stream_position.h"
#include "tee/detail/nonce.h"
#include "tee/errors.h"
#include "tests/common/positions.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

using detail::Nonce;

TEST(Nonce, LayoutIsOriginThenCounterBigEndian) {
  const Nonce n = Nonce::make(0x01020304u, 0x05060708090a0b0cull);
  EXPECT_EQ(to_hex(n.bytes), "0102030405060708090a0b0c");
  EXPECT_EQ(n.origin(), 0x01020304u);
  EXPECT_EQ(n.counter(), 0x05060708090a0b0cull);
}

TEST(Nonce, SequencesNeverRepeatAcrossOrigins) {
  std::set<std::array<std::uint8_t, 12>> seen;
  for (std::uint32_t origin = 0; origin < 8; ++origin) {
    MessageCounter seq(origin);
    for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(detail::nonce_at(seq.next()).bytes).second);
    EXPECT_EQ(seq.next_counter(), 1000u);
  }
}

TEST(Nonce, SequenceThrowsInsteadOfWrapping) {
  MessageCounter seq = tt::testing::counter_at(5, std::numeric_limits<std::uint64_t>::max() - 2);
  EXPECT_EQ(seq.next().counter(), std::numeric_limits<std::uint64_t>::max() - 2);
  EXPECT_EQ(seq.next().counter(), std::numeric_limits<std::uint64_t>::max() - 1);
  EXPECT_THROW(seq.next(), CryptoError);
  EXPECT_THROW(seq.next(), CryptoError);  // stays exhausted
}

// Note [A counter is never duplicated]: no second counter can go on where one is.
template <class C>
concept Resumable = requires {
  C::resume(std::uint32_t{0}, std::uint64_t{0});
};
static_assert(!Resumable<MessageCounter>, "no counter may be resumed at a chosen position");
static_assert(!std::is_copy_constructible_v<MessageCounter>, "a copy would repeat the original's positions");
static_assert(!std::is_copy_assignable_v<MessageCounter>);
static_assert(std::is_nothrow_move_constructible_v<MessageCounter>);

TEST(MessageCounter, AMovedFromCounterIsSpent) {
  MessageCounter a(2);
  EXPECT_EQ(a.next().counter(), 0u);
  MessageCounter b = std::move(a);
  EXPECT_EQ(b.next().counter(), 1u) << "the stream goes on in its new owner";
  EXPECT_THROW(a.next(), CryptoError)
      << "the moved-from counter must not hand out position 1 again";  // NOLINT
  EXPECT_THROW(a.skip_to(5), CryptoError);                             // NOLINT(bugprone-use-after-move)
  MessageCounter c(2);
  c = std::move(b);
  EXPECT_EQ(c.next().counter(), 2u);
  EXPECT_THROW(b.next(), CryptoError);  // NOLINT(bugprone-use-after-move)
}

TEST(MessageCounter, SkipsForwardButNeverBack) {
  MessageCounter seq(4);
  EXPECT_EQ(seq.next().counter(), 0u);
  const StreamPosition at = seq.skip_to(10);
  EXPECT_EQ(at.origin(), 4u);
  EXPECT_EQ(at.counter(), 10u);
  EXPECT_EQ(seq.next().counter(), 11u) << "positions 1..9 are passed for good";
  EXPECT_THROW(seq.skip_to(10), CryptoError) << "position 10 was handed out";
  EXPECT_THROW(seq.skip_to(3), CryptoError) << "position 3 was passed";
  EXPECT_EQ(seq.skip_to(12).counter(), 12u) << "the next unused position may be asked for by name";
  EXPECT_THROW(seq.skip_to(std::numeric_limits<std::uint64_t>::max()), CryptoError);
}

SecretBytes fixed_secret() {
  return SecretBytes(ByteView(from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")));
}
// A ratchet starts only from a stream's secret (tee/identity/traffic_keys.h).
StreamSecret fixed_stream() {
  return StreamSecret(fixed_secret());
}

TEST(KeyRatchet, DeterministicAcrossInstances) {
  KeyRatchet a(fixed_stream(), Cipher::Aes256Gcm), b(fixed_stream(), Cipher::Aes256Gcm);
  std::set<std::string> keys;
  for (int e = 0; e < 5; ++e) {
    EXPECT_EQ(a.epoch(), static_cast<std::uint64_t>(e));
    EXPECT_TRUE(a.key() == b.key());
    EXPECT_EQ(a.key().size(), 32u);
    EXPECT_TRUE(keys.insert(to_hex(a.key().view())).second) << "epoch keys must all differ";
    a.advance();
    b.advance();
  }
}

TEST(KeyRatchet, FollowsTheDocumentedDerivation) {
  KeyRatchet r(fixed_stream(), Cipher::Aes128Gcm);
  const SecretBytes s0 = fixed_secret();
  EXPECT_TRUE(r.key().secret() ==
              hkdf_expand(s0.view(), bytes_of(std::string_view("teetrain key aes-128-gcm")), 16));
  std::vector<std::uint8_t> info(bytes_of(std::string_view("teetrain rekey")).begin(),
                                 bytes_of(std::string_view("teetrain rekey")).end());
  info.resize(info.size() + 8);
  store_be64(info.data() + info.size() - 8, 1);
  const SecretBytes s1 = hkdf_expand(s0.view(), info, 32);
  r.advance();
  EXPECT_TRUE(r.key().secret() ==
              hkdf_expand(s1.view(), bytes_of(std::string_view("teetrain key aes-128-gcm")), 16));
}

TEST(KeyRatchet, CipherSeparatesKeys) {
  KeyRatchet a(fixed_stream(), Cipher::Aes256Gcm), c(fixed_stream(), Cipher::ChaCha20Poly1305);
  EXPECT_FALSE(a.key() == c.key());
}

TEST(KeyRatchet, PolicyByMessagesAndBytes) {
  RekeyPolicy p;
  p.max_messages = 3;
  p.max_bytes = 1000;
  KeyRatchet r(fixed_stream(), Cipher::Aes256Gcm, p);
  EXPECT_FALSE(r.record(10));
  EXPECT_FALSE(r.record(10));
  EXPECT_TRUE(r.record(10));  // third message
  r.advance();
  EXPECT_EQ(r.messages(), 0u);
  EXPECT_EQ(r.bytes(), 0u);
  EXPECT_FALSE(r.record(999));
  EXPECT_TRUE(r.record(1));  // 1000 bytes
  EXPECT_EQ(r.epoch(), 1u);
}

TEST(KeyRatchet, DefaultsAndMegabytes) {
  const RekeyPolicy d;
  EXPECT_EQ(d.max_bytes, std::uint64_t{64} << 30);
  EXPECT_EQ(d.max_messages, std::uint64_t{1} << 31);
  EXPECT_EQ(RekeyPolicy::from_megabytes(256).max_bytes, std::uint64_t{256} << 20);
  EXPECT_EQ(RekeyPolicy::from_megabytes(0).max_bytes, d.max_bytes);         // 0 = default
  EXPECT_EQ(RekeyPolicy::from_megabytes(1u << 30).max_bytes, d.max_bytes);  // capped at the default
}

TEST(KeyRatchet, RejectsBadSecret) {
  EXPECT_THROW(KeyRatchet(StreamSecret::random(16), Cipher::Aes256Gcm), std::invalid_argument);
}

}  // namespace
}  // namespace tt::tee
