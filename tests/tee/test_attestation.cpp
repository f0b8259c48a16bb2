// Emulated attestation: evidence round trip, each failure reason, measurement, session secret.
#include <gtest/gtest.h>

#include <fstream>

#include "tee/attestation.h"
#include "tee/errors.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

struct Fixture {
  Ed25519KeyPair device = Ed25519KeyPair::generate();
  X25519KeyPair kx = X25519KeyPair::generate();
  Measurement measurement = sha256(std::string_view("binary+config"));
  VerifierNonce nonce = make_verifier_nonce();

  Evidence evidence(std::uint32_t rank = 1) const {
    return make_evidence(rank, measurement, device, nonce, kx.public_key());
  }
  EvidencePolicy policy() const { return EvidencePolicy{measurement, nonce, std::nullopt, {}}; }
};

TEST(Attestation, GoodEvidenceVerifies) {
  const Fixture f;
  const VerifyResult r = verify(f.evidence(), f.policy());
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.reason, "ok");
}

TEST(Attestation, SerializeRoundTrip) {
  const Fixture f;
  const Evidence e = f.evidence(42);
  const auto bytes = e.serialize();
  ASSERT_EQ(bytes.size(), Evidence::kSerializedSize);
  const Evidence d = Evidence::deserialize(bytes);
  EXPECT_EQ(d.rank, 42u);
  EXPECT_EQ(d.serialize(), bytes);
  EXPECT_TRUE(verify(d, f.policy()).ok);
}

TEST(Attestation, MalformedBytesAreRefused) {
  const Fixture f;
  auto bytes = f.evidence().serialize();
  EXPECT_THROW(Evidence::deserialize(ByteView(bytes).first(bytes.size() - 1)), IntegrityError);
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(Evidence::deserialize(longer), IntegrityError);
  bytes[0] ^= 1;
  try {
    Evidence::deserialize(bytes);
    FAIL();
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed evidence"), std::string::npos);
  }
}

TEST(Attestation, EveryFieldIsCoveredByTheSignature) {
  const Fixture f;
  const auto good = f.evidence().serialize();
  // Flip one bit in each byte before the signature: deserialize must still parse (except the magic)
  // and verification must fail with "bad signature".
  for (std::size_t i = 8; i < Evidence::kSerializedSize - 64; ++i) {
    auto bytes = good;
    bytes[i] ^= 0x20;
    EXPECT_EQ(verify(Evidence::deserialize(bytes), f.policy()).reason, "bad signature") << "byte " << i;
  }
  auto bytes = good;
  bytes.back() ^= 1;
  EXPECT_EQ(verify(Evidence::deserialize(bytes), f.policy()).reason, "bad signature");
}

TEST(Attestation, WrongMeasurement) {
  Fixture f;
  const EvidencePolicy expect = f.policy();
  f.measurement = sha256(std::string_view("a different binary"));  // genuine device, other code
  const VerifyResult r = verify(f.evidence(), expect);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "measurement mismatch");
}

TEST(Attestation, StaleNonce) {
  Fixture f;
  const Evidence old = f.evidence();  // answered an earlier challenge
  f.nonce = make_verifier_nonce();
  EXPECT_EQ(verify(old, f.policy()).reason, "stale nonce");
}

TEST(Attestation, BadSignatureFromAnotherKey) {
  const Fixture f;
  Evidence e = f.evidence();
  e.signature = Ed25519KeyPair::generate().sign(e.signed_bytes());
  EXPECT_EQ(verify(e, f.policy()).reason, "bad signature");
}

TEST(Attestation, AllowList) {
  const Fixture f;
  EvidencePolicy p = f.policy();
  p.allowed_device_keys = {Ed25519KeyPair::generate().public_key()};
  EXPECT_EQ(verify(f.evidence(), p).reason, "device key not in allow-list");
  p.allowed_device_keys.push_back(f.device.public_key());
  EXPECT_TRUE(verify(f.evidence(), p).ok);
}

TEST(Attestation, RankChecked) {
  const Fixture f;
  EvidencePolicy p = f.policy();
  p.rank = 2;
  EXPECT_EQ(verify(f.evidence(1), p).reason, "rank mismatch");
  EXPECT_TRUE(verify(f.evidence(2), p).ok);
}

TEST(Attestation, MeasureHashesBinaryAndConfig) {
  test::TempDir dir;
  const auto bin = dir / "fake-binary";
  { std::ofstream(bin, std::ios::binary) << "ELF....payload"; }
  const Measurement m1 = measure(bin, "model=gpt2-tiny tee=fast");
  EXPECT_EQ(m1, measure(bin, "model=gpt2-tiny tee=fast"));
  EXPECT_NE(m1, measure(bin, "model=gpt2-tiny tee=cc"));
  // Length framing: moving bytes between binary and config changes the measurement.
  const auto bin2 = dir / "fake-binary-2";
  { std::ofstream(bin2, std::ios::binary) << "ELF....payloadm"; }
  EXPECT_NE(measure(bin, "model"), measure(bin2, "odel"));
  { std::ofstream(bin, std::ios::binary | std::ios::app) << "X"; }
  EXPECT_NE(m1, measure(bin, "model=gpt2-tiny tee=fast"));
  EXPECT_THROW(measure(dir / "missing", "x"), std::runtime_error);
}

TEST(Attestation, SessionSecretAgreesAndBindsTranscript) {
  Fixture a, b;
  b.nonce = a.nonce;
  const Evidence ea = a.evidence(0), eb = b.evidence(1);
  const SecretBytes sa = derive_session_secret(a.kx, ea, eb, "teetrain link 0-1");
  const SecretBytes sb = derive_session_secret(b.kx, eb, ea, "teetrain link 0-1");
  EXPECT_TRUE(sa == sb);
  EXPECT_EQ(sa.size(), 32u);
  EXPECT_FALSE(sa == derive_session_secret(a.kx, ea, eb, "other label"));
  // Same keys, different evidence (e.g. a replayed nonce) -> different secret.
  Evidence eb2 = eb;
  eb2.verifier_nonce = make_verifier_nonce();
  EXPECT_FALSE(sa == derive_session_secret(a.kx, ea, eb2, "teetrain link 0-1"));
  EXPECT_THROW(derive_session_secret(a.kx, eb, ea, "x"), std::invalid_argument);
}

}  // namespace
}  // namespace tt::tee
