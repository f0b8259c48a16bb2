// The vendor's device profile and the revocation requirement (tee/identity/x509.h): certificates that chain
// to the trusted root but are not device identities — CA:TRUE, without the digitalSignature key usage, with a
// foreign or no extended key usage, without any extension — are refused with the reason, by
// check_device_profile and by TrustAnchor::verify (what a verifier runs on a peer's certificate and
// on its own); what provision issues is accepted. A trust anchor cannot be loaded without its CRL
// unless explicitly without revocation, which it then reports; deleting the public CRL and
// provisioning again keeps every revocation.
#include <gtest/gtest.h>

#include <fstream>

#include "tee/errors.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"
#include "tests/tee/cert_factory.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

namespace fs = std::filesystem;
using test::Extension;

struct BadLeaf {
  std::string what;
  std::vector<Extension> extensions;
  std::string reason;  // expected in the refusal
};

std::vector<BadLeaf> bad_leaves() {
  const std::string device_eku = std::string("critical,") + kDevicePurposeOid;
  return {
      {"CA:TRUE",
       {{NID_basic_constraints, "critical,CA:TRUE"},
        {NID_key_usage, "critical,digitalSignature"},
        {NID_ext_key_usage, device_eku}},
       "CA:TRUE"},
      {"no basicConstraints",
       {{NID_key_usage, "critical,digitalSignature"}, {NID_ext_key_usage, device_eku}},
       "no basicConstraints CA:FALSE"},
      {"key usage without digitalSignature",
       {{NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,keyAgreement"},
        {NID_ext_key_usage, device_eku}},
       "lacks the digitalSignature key usage"},
      {"no key usage",
       {{NID_basic_constraints, "critical,CA:FALSE"}, {NID_ext_key_usage, device_eku}},
       "lacks the digitalSignature key usage"},
      {"key usage that signs certificates",
       {{NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature,keyCertSign"},
        {NID_ext_key_usage, device_eku}},
       "allows signing certificates"},
      {"foreign extended key usage",
       {{NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature"},
        {NID_ext_key_usage, "serverAuth"}},
       "foreign purpose 1.3.6.1.5.5.7.3.1"},
      {"device purpose and a foreign one",
       {{NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature"},
        {NID_ext_key_usage, std::string("critical,") + kDevicePurposeOid + ",codeSigning"}},
       "foreign purpose 1.3.6.1.5.5.7.3.3"},
      {"no extended key usage",
       {{NID_basic_constraints, "critical,CA:FALSE"}, {NID_key_usage, "critical,digitalSignature"}},
       "no extendedKeyUsage"},
      {"no extensions", {}, "no extensions"},
  };
}

class DeviceProfile : public ::testing::Test {
 protected:
  void SetUp() override { provision({dir_.path(), 1, {}}); }
  TrustAnchor anchor() const {
    const fs::path root = vendor_root_path(dir_.path());
    return TrustAnchor::load(root, TrustAnchor::crl_beside(root));
  }
  test::TempDir dir_;
};

TEST_F(DeviceProfile, ProvisionedDevicesAndAProfileLeafAreAccepted) {
  const TrustAnchor a = anchor();
  const Certificate provisioned = DeviceIdentity::load_pem(device_identity_path(dir_.path(), 0)).certificate;
  EXPECT_TRUE(check_device_profile(provisioned).ok) << check_device_profile(provisioned).reason;
  EXPECT_TRUE(a.verify(provisioned).ok) << a.verify(provisioned).reason;
  const Certificate minted = test::mint_device_certificate(dir_.path(), Ed25519KeyPair::generate(),
                                                           test::device_profile_extensions());
  const ChainVerdict v = a.verify(minted);
  EXPECT_TRUE(v.ok) << v.reason;  // the helper's good case is the profile, so its bad cases test only it
}

TEST_F(DeviceProfile, LeavesOutsideTheProfileAreRefusedWithTheReason) {
  const TrustAnchor a = anchor();
  int serial = 100;
  for (const BadLeaf& bad : bad_leaves()) {
    const Certificate cert = test::mint_device_certificate(dir_.path(), Ed25519KeyPair::generate(),
                                                           bad.extensions, std::to_string(++serial));
    const ChainVerdict profile = check_device_profile(cert);
    EXPECT_FALSE(profile.ok) << bad.what;
    EXPECT_NE(profile.reason.find(bad.reason), std::string::npos) << bad.what << ": " << profile.reason;
    // The chain is genuine (the vendor's root signed it): only the profile refuses it.
    const ChainVerdict verdict = a.verify(cert);
    EXPECT_FALSE(verdict.ok) << bad.what;
    EXPECT_NE(verdict.reason.find(bad.reason), std::string::npos) << bad.what << ": " << verdict.reason;
  }
}

TEST_F(DeviceProfile, TheRootItselfIsNotADevice) {
  const TrustAnchor a = anchor();
  const ChainVerdict v = a.verify(a.root());
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("CA:TRUE"), std::string::npos) << v.reason;
}

TEST(Revocation, AnAnchorNeedsItsRevocationListUnlessExplicitlyWithout) {
  test::TempDir dir;
  provision({dir.path(), 2, {1}});
  const fs::path root = vendor_root_path(dir.path());
  const fs::path crl = TrustAnchor::crl_beside(root);
  EXPECT_EQ(crl, dir / "vendor_root.crl");
  const Certificate revoked = DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate;
  EXPECT_TRUE(TrustAnchor::load(root, crl).checks_revocation());
  EXPECT_FALSE(TrustAnchor::load(root, crl).verify(revoked).ok);

  fs::remove(crl);
  EXPECT_EQ(TrustAnchor::crl_beside(root), crl);  // where it belongs, present or not
  EXPECT_THROW(TrustAnchor::load(root, crl), InputError);
  EXPECT_THROW(TrustAnchor::load(root, {}), InputError);
  // The explicit opt-out accepts the revoked device, and says so.
  const TrustAnchor without = TrustAnchor::load_without_revocation(root);
  EXPECT_FALSE(without.checks_revocation());
  EXPECT_TRUE(without.verify(revoked).ok);
  EXPECT_NE(without.describe().find("revocation NOT checked"), std::string::npos) << without.describe();
}

TEST(Revocation, ProvisioningAgainRestoresADeletedListWithEveryRevocation) {
  test::TempDir dir;
  provision({dir.path(), 3, {1}});
  provision({dir.path(), 3, {2}});
  const fs::path root = vendor_root_path(dir.path());
  fs::remove(TrustAnchor::crl_beside(root));
  const ProvisionReport again = provision({dir.path(), 3, {}});
  EXPECT_EQ(again.revoked_total, 2u);
  const TrustAnchor a = TrustAnchor::load(root, TrustAnchor::crl_beside(root));
  EXPECT_EQ(a.revoked_count(), 2u);
  EXPECT_FALSE(a.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate).ok);
  EXPECT_FALSE(a.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 2)).certificate).ok);
  EXPECT_TRUE(a.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate).ok);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Provision, CertifiesOlderDevicesAgainInTheProfileKeepingKeysAndRevocations) {
  test::TempDir dir;
  provision({dir.path(), 2, {1}});
  // What an older provision wrote: the same keys and serials, without the extended key usage.
  std::vector<PublicKey> keys;
  for (int i = 0; i < 2; ++i) {
    const fs::path path = device_identity_path(dir.path(), i);
    const DeviceIdentity id = DeviceIdentity::load_pem(path);
    keys.push_back(id.key.public_key());
    const Certificate old = test::mint_device_certificate(
        dir.path(), id.key,
        {{NID_basic_constraints, "critical,CA:FALSE"}, {NID_key_usage, "critical,digitalSignature"}},
        id.certificate.serial_hex());
    const std::string text = read_text(path);
    std::ofstream(path, std::ios::trunc)
        << text.substr(0, text.find("-----BEGIN CERTIFICATE")) << test::pem_of(old);
  }
  const fs::path root = vendor_root_path(dir.path());
  const Certificate old0 = DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate;
  EXPECT_NE(
      TrustAnchor::load(root, TrustAnchor::crl_beside(root)).verify(old0).reason.find("no extendedKeyUsage"),
      std::string::npos);

  const ProvisionReport r = provision({dir.path(), 2, {}});
  EXPECT_EQ(r.reissued, (std::vector<int>{0, 1}));
  EXPECT_NE(r.text.find("issued again in the device profile"), std::string::npos) << r.text;
  const TrustAnchor anchor = TrustAnchor::load(root, TrustAnchor::crl_beside(root));
  for (int i = 0; i < 2; ++i) {
    const DeviceIdentity id = DeviceIdentity::load_pem(device_identity_path(dir.path(), i));
    EXPECT_EQ(id.key.public_key(), keys[static_cast<std::size_t>(i)]);
    EXPECT_TRUE(check_device_profile(id.certificate).ok) << i;
  }
  EXPECT_TRUE(anchor.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate).ok);
  const ChainVerdict revoked =
      anchor.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate);
  EXPECT_NE(revoked.reason.find("revoked"), std::string::npos)
      << revoked.reason;  // the revocation followed it
  EXPECT_TRUE(provision({dir.path(), 2, {}}).reissued.empty());
}

}  // namespace
}  // namespace tt::tee
