// The challenge that binds a rank's key-exchange key into real evidence (tee/identity/kx_binding.h,
// docs/design.md §12): its exact bytes, computed independently (Python's hashlib over the same
// concatenation), so a verifier written in any language derives the same value; and that every input
// moves it, so a relay's own key, another rank or another verifier's nonce gives another challenge.
#include <gtest/gtest.h>

#include <numeric>

#include "tee/identity/kx_binding.h"

namespace tt::tee {
namespace {

Sha256Digest iota32(std::uint8_t first) {
  Sha256Digest d{};
  std::iota(d.begin(), d.end(), first);
  return d;
}

// hashlib.sha256(b"teetrain kx v1" + bytes(range(32)) + rank.to_bytes(4, "big") + bytes(range(32, 64)))
TEST(KxBinding, ExactBytes) {
  const Sha256Digest nonce = iota32(0);
  const PublicKey key = iota32(32);
  EXPECT_EQ(to_hex(kx_challenge(nonce, 3, key)),
            "ef7c145c4872f8b8517685669c8123fe08dd814299bc9a33e8bc22554eb3c6b9");
  // The rank is big-endian: 0x01020304 is the bytes 01 02 03 04.
  EXPECT_EQ(to_hex(kx_challenge(nonce, 0x01020304, key)),
            "ba2ecadfd3ff751cdd160520ff735d1aabb9dee2cbda1dfc92221c0770780a32");
}

TEST(KxBinding, EveryInputMovesTheChallenge) {
  const Sha256Digest nonce = iota32(0);
  const PublicKey key = iota32(32);
  const Sha256Digest base = kx_challenge(nonce, 3, key);
  Sha256Digest other_nonce = nonce;
  other_nonce[31] ^= 1;
  PublicKey relay_key = key;
  relay_key[0] ^= 1;
  EXPECT_NE(kx_challenge(other_nonce, 3, key), base);
  EXPECT_NE(kx_challenge(nonce, 4, key), base);
  EXPECT_NE(kx_challenge(nonce, 3, relay_key), base);
  EXPECT_EQ(kx_challenge(nonce, 3, key), base);  // and it is a function: the verifier recomputes it
}

TEST(KxBinding, ReportDataIsTheChallengeThenZeros) {
  const Sha256Digest challenge = kx_challenge(iota32(0), 3, X25519KeyPair::generate().public_key());
  const ReportData rd = report_data_of(challenge);
  EXPECT_TRUE(std::equal(challenge.begin(), challenge.end(), rd.begin()));
  EXPECT_TRUE(std::all_of(rd.begin() + 32, rd.end(), [](std::uint8_t b) { return b == 0; }));
}

// Note [GPU nonce from the challenge]: its own label over the challenge, never the challenge itself,
// and a function of it (the verifier recomputes it).
TEST(KxBinding, GpuNonceIsDerivedFromTheChallengeUnderItsOwnLabel) {
  const Sha256Digest challenge = kx_challenge(iota32(0), 3, X25519KeyPair::generate().public_key());
  const Sha256Digest gpu = gpu_nonce_of(challenge);
  EXPECT_EQ(gpu, Sha256().update(std::string_view("teetrain kx gpu v1")).update(challenge).finish());
  EXPECT_NE(gpu, challenge);
  Sha256Digest other = challenge;
  other[0] ^= 1;
  EXPECT_NE(gpu_nonce_of(other), gpu);
}

}  // namespace
}  // namespace tt::tee
