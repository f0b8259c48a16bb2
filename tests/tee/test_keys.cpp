// X25519 (RFC 7748) and Ed25519 (RFC 8032) vectors, PEM round trip, tamper.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tee/errors.h"
#include "tee/identity/keys.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

using test::hex;
using test::hex_array;

// RFC 7748 §6.1.
TEST(X25519, Rfc7748Section6_1) {
  const auto alice =
      X25519KeyPair::from_private(hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"));
  const auto bob =
      X25519KeyPair::from_private(hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"));
  EXPECT_EQ(to_hex(alice.public_key()), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  EXPECT_EQ(to_hex(bob.public_key()), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
  const char* shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
  EXPECT_EQ(to_hex(alice.shared_secret(bob.public_key()).view()), shared);
  EXPECT_EQ(to_hex(bob.shared_secret(alice.public_key()).view()), shared);
}

TEST(X25519, GeneratedPairsAgree) {
  const auto a = X25519KeyPair::generate(), b = X25519KeyPair::generate();
  EXPECT_TRUE(a.shared_secret(b.public_key()) == b.shared_secret(a.public_key()));
  EXPECT_NE(a.public_key(), b.public_key());
}

TEST(X25519, LowOrderPeerKeyRefused) {
  const auto a = X25519KeyPair::generate();
  EXPECT_THROW(a.shared_secret(PublicKey{}), IntegrityError);  // the all-zero point
}

// RFC 8032 §7.1 tests 1 and 2.
TEST(Ed25519, Rfc8032Tests1And2) {
  struct Case {
    const char *secret, *pub, *msg, *sig;
  };
  const Case cases[] = {
      {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
       "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
       "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf"
       "5f059"
       "5bbe24655141438e7a100b"},
      {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
       "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
       "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2"
       "eaeb4"
       "302aeeb00d291612bb0c00"},
  };
  for (const Case& c : cases) {
    const auto key = Ed25519KeyPair::from_private(hex(c.secret));
    EXPECT_EQ(to_hex(key.public_key()), c.pub);
    const auto msg = hex(c.msg);
    const Signature sig = key.sign(msg);
    EXPECT_EQ(to_hex(sig), c.sig);
    EXPECT_TRUE(ed25519_verify(hex_array<32>(c.pub), msg, hex_array<64>(c.sig)));
  }
}

TEST(Ed25519, TamperedMessageSignatureOrKeyFails) {
  const auto key = Ed25519KeyPair::generate();
  auto msg = test::pattern(100);
  Signature sig = key.sign(msg);
  ASSERT_TRUE(ed25519_verify(key.public_key(), msg, sig));
  msg[50] ^= 1;
  EXPECT_FALSE(ed25519_verify(key.public_key(), msg, sig));
  msg[50] ^= 1;
  sig[10] ^= 1;
  EXPECT_FALSE(ed25519_verify(key.public_key(), msg, sig));
  sig[10] ^= 1;
  EXPECT_FALSE(ed25519_verify(Ed25519KeyPair::generate().public_key(), msg, sig));
  EXPECT_TRUE(ed25519_verify(key.public_key(), msg, sig));
}

TEST(Ed25519, PemRoundTripOwnerOnly) {
  test::TempDir dir;
  const auto path = dir / "device.pem";
  const auto key = Ed25519KeyPair::generate();
  key.save_pem(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto loaded = Ed25519KeyPair::load_pem(path);
  EXPECT_EQ(loaded.public_key(), key.public_key());
  const auto msg = test::pattern(10);
  EXPECT_TRUE(ed25519_verify(key.public_key(), msg, loaded.sign(msg)));
  // Saving again replaces the file.
  Ed25519KeyPair::generate().save_pem(path);
  EXPECT_NE(Ed25519KeyPair::load_pem(path).public_key(), key.public_key());
}

TEST(Ed25519, LoadErrorsNameThePath) {
  test::TempDir dir;
  try {
    Ed25519KeyPair::load_pem(dir / "missing.pem");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pem"), std::string::npos);
  }
  std::ofstream(dir / "junk.pem") << "not a key\n";
  EXPECT_THROW(Ed25519KeyPair::load_pem(dir / "junk.pem"), InputError);
}

}  // namespace
}  // namespace tt::tee
