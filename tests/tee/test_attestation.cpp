// Emulated attestation v2: evidence round trip, each refusal reason (certificate chain, revocation,
// foreign key, signature, rank, nonce, binary and configuration against the policy), measurement,
// session secret, and a fuzz sweep of the evidence parser.
#include <gtest/gtest.h>

#include <fstream>

#include "tee/errors.h"
#include "tee/identity/attestation.h"
#include "tee/identity/vendor.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

// One vendor with three devices (device 2 revoked), shared by the tests of this file.
class Vendor {
 public:
  Vendor() {
    provision({dir_.path(), 3, {2}});
    anchor_.emplace(TrustAnchor::load(vendor_root_path(dir_.path()),
                                      TrustAnchor::crl_beside(vendor_root_path(dir_.path()))));
  }
  DeviceIdentity device(int i) const {
    return DeviceIdentity::load_pem(device_identity_path(dir_.path(), i));
  }
  const TrustAnchor& anchor() const { return *anchor_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  test::TempDir dir_;
  std::optional<TrustAnchor> anchor_;
};

struct Fixture {
  Vendor vendor;
  DeviceIdentity id = vendor.device(0);
  X25519KeyPair kx = X25519KeyPair::generate();
  Measurements measurement{sha256(std::string_view("binary")), sha256(std::string_view("config"))};
  VerifierNonce nonce = make_verifier_nonce();
  VerifierPolicy policy{{measurement.binary}, {measurement.config}};

  Evidence evidence(std::uint32_t rank = 1) const {
    return make_evidence(rank, measurement, id.key, id.certificate.der(), nonce, kx.public_key());
  }
  EvidenceCheck check() const { return EvidenceCheck{&vendor.anchor(), &policy, nonce, std::nullopt}; }
};

TEST(Attestation, GoodEvidenceVerifies) {
  const Fixture f;
  const VerifyResult r = verify(f.evidence(), f.check());
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.reason, "ok");
}

TEST(Attestation, SerializeRoundTrip) {
  const Fixture f;
  const Evidence e = f.evidence(42);
  const auto bytes = e.serialize();
  ASSERT_EQ(bytes.size(), Evidence::kFixedSize + e.certificate.size());
  const Evidence d = Evidence::deserialize(bytes);
  EXPECT_EQ(d.rank, 42u);
  EXPECT_EQ(d.serialize(), bytes);
  EXPECT_TRUE(verify(d, f.check()).ok);
}

TEST(Attestation, MalformedBytesAreRefusedNeverCrash) {
  const Fixture f;
  const auto good = f.evidence().serialize();
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_THROW(Evidence::deserialize(ByteView(good).first(n)), IntegrityError) << n;
  auto longer = good;
  longer.push_back(0);
  EXPECT_THROW(Evidence::deserialize(longer), IntegrityError);
  auto bad_magic = good;
  bad_magic[0] ^= 1;
  EXPECT_THROW(Evidence::deserialize(bad_magic), IntegrityError);
  // Random corruption anywhere: either refused while parsing or refused by verify, never accepted.
  std::uint32_t state = 7;
  for (int i = 0; i < 3000; ++i) {
    auto bytes = good;
    state = state * 1664525u + 1013904223u;
    bytes[state % bytes.size()] ^= static_cast<std::uint8_t>(1u + (state >> 24) % 255);
    try {
      EXPECT_FALSE(verify(Evidence::deserialize(bytes), f.check()).ok) << "accepted corruption " << i;
    } catch (const IntegrityError&) {
    }
  }
  // Random bytes of every small length.
  for (std::size_t n = 0; n < 600; n += 7) {
    auto bytes = test::pattern(n, static_cast<std::uint8_t>(n));
    EXPECT_THROW(Evidence::deserialize(bytes), IntegrityError);
  }
}

TEST(Attestation, EveryFieldIsCoveredByTheSignature) {
  const Fixture f;
  const auto good = f.evidence().serialize();
  // Flip a bit in each field byte before the certificate: verification must fail ("bad signature"
  // once the certificate still verifies; the device key field fails as "not the certified key").
  for (std::size_t i = 8; i < Evidence::kFixedSize - 64 - 4; ++i) {
    auto bytes = good;
    bytes[i] ^= 0x20;
    const VerifyResult r = verify(Evidence::deserialize(bytes), f.check());
    EXPECT_FALSE(r.ok) << "byte " << i;
  }
  auto bytes = good;
  bytes.back() ^= 1;
  EXPECT_EQ(verify(Evidence::deserialize(bytes), f.check()).reason, "bad signature");
}

TEST(Attestation, UncertifiedKeyIsRefused) {
  const Fixture f;
  const Ed25519KeyPair fresh = Ed25519KeyPair::generate();
  const Evidence none = make_evidence(1, f.measurement, fresh, {}, f.nonce, f.kx.public_key());
  EXPECT_EQ(verify(none, f.check()).reason, "no device certificate (the peer runs without a root of trust)");
  // A genuine certificate with a signature by another key (the certificate copied, the key not).
  const Evidence stolen_cert =
      make_evidence(1, f.measurement, fresh, f.id.certificate.der(), f.nonce, f.kx.public_key());
  EXPECT_EQ(verify(stolen_cert, f.check()).reason,
            "evidence signed by a key that is not the certified device key");
  // Without an anchor, the self-asserted key passes: that is what --attestation none means.
  EvidenceCheck no_anchor = f.check();
  no_anchor.anchor = nullptr;
  EXPECT_TRUE(verify(none, no_anchor).ok);
}

TEST(Attestation, OtherRootAndRevokedDeviceAreRefused) {
  const Fixture f;
  const Vendor other;
  const DeviceIdentity foreign = other.device(0);
  const Evidence e1 =
      make_evidence(1, f.measurement, foreign.key, foreign.certificate.der(), f.nonce, f.kx.public_key());
  EXPECT_NE(verify(e1, f.check()).reason.find("not issued by the trusted vendor root"), std::string::npos);
  const DeviceIdentity revoked = f.vendor.device(2);
  const Evidence e2 =
      make_evidence(1, f.measurement, revoked.key, revoked.certificate.der(), f.nonce, f.kx.public_key());
  EXPECT_NE(verify(e2, f.check()).reason.find("revoked"), std::string::npos);
}

TEST(Attestation, BinaryAndConfigurationAgainstThePolicy) {
  Fixture f;
  const VerifierPolicy policy = f.policy;
  f.measurement.binary = sha256(std::string_view("a modified binary"));
  VerifyResult r = verify(f.evidence(), EvidenceCheck{&f.vendor.anchor(), &policy, f.nonce, std::nullopt});
  EXPECT_NE(r.reason.find("binary measurement"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not in the policy"), std::string::npos) << r.reason;
  f.measurement.binary = policy.binaries[0];
  f.measurement.config = sha256(std::string_view("--lr 0.01"));
  r = verify(f.evidence(), EvidenceCheck{&f.vendor.anchor(), &policy, f.nonce, std::nullopt});
  EXPECT_NE(r.reason.find("configuration measurement"), std::string::npos) << r.reason;
  // A policy listing several references accepts any of them.
  VerifierPolicy wider = policy;
  wider.configs.push_back(f.measurement.config);
  EXPECT_TRUE(verify(f.evidence(), EvidenceCheck{&f.vendor.anchor(), &wider, f.nonce, std::nullopt}).ok);
}

TEST(Attestation, StaleNonce) {
  Fixture f;
  const Evidence old = f.evidence();  // answered an earlier challenge
  f.nonce = make_verifier_nonce();
  EXPECT_NE(verify(old, f.check()).reason.find("stale nonce"), std::string::npos);
}

TEST(Attestation, RankChecked) {
  const Fixture f;
  EvidenceCheck c = f.check();
  c.rank = 2;
  EXPECT_NE(verify(f.evidence(1), c).reason.find("rank mismatch"), std::string::npos);
  EXPECT_TRUE(verify(f.evidence(2), c).ok);
}

TEST(Attestation, MeasureHashesBinaryAndConfigApart) {
  test::TempDir dir;
  const auto bin = dir / "fake-binary";
  { std::ofstream(bin, std::ios::binary) << "ELF....payload"; }
  const Measurements m1 = measure(bin, "model=gpt2-tiny tee=fast");
  EXPECT_EQ(m1.binary, sha256(std::string_view("ELF....payload")));  // what sha256sum prints
  EXPECT_EQ(m1.config, sha256(std::string_view("model=gpt2-tiny tee=fast")));
  EXPECT_NE(m1.combined(), measure(bin, "model=gpt2-tiny tee=cc").combined());
  { std::ofstream(bin, std::ios::binary | std::ios::app) << "X"; }
  EXPECT_NE(m1.binary, measure_binary(bin));
  EXPECT_THROW(measure(dir / "missing", "x"), InputError);
}

TEST(Attestation, SessionSecretAgreesAndBindsTranscript) {
  Fixture a;
  const DeviceIdentity id_b = a.vendor.device(1);
  const X25519KeyPair kx_b = X25519KeyPair::generate();
  const Evidence ea = a.evidence(0);
  const Evidence eb =
      make_evidence(1, a.measurement, id_b.key, id_b.certificate.der(), a.nonce, kx_b.public_key());
  const SecretBytes sa = derive_session_secret(a.kx, ea, eb, "teetrain link 0-1");
  const SecretBytes sb = derive_session_secret(kx_b, eb, ea, "teetrain link 0-1");
  EXPECT_TRUE(sa == sb);
  EXPECT_EQ(sa.size(), 32u);
  EXPECT_FALSE(sa == derive_session_secret(a.kx, ea, eb, "other label"));
  // Same keys, different evidence (another nonce, another certificate) -> different secret.
  Evidence eb2 = eb;
  eb2.verifier_nonce = make_verifier_nonce();
  EXPECT_FALSE(sa == derive_session_secret(a.kx, ea, eb2, "teetrain link 0-1"));
  Evidence eb3 = eb;
  eb3.certificate = a.id.certificate.der();
  EXPECT_FALSE(sa == derive_session_secret(a.kx, ea, eb3, "teetrain link 0-1"));
  EXPECT_THROW(derive_session_secret(a.kx, eb, ea, "x"), std::invalid_argument);
}

}  // namespace
}  // namespace tt::tee
