// The emulated vendor root of trust: provision writes real X.509 (root, device identities, CRL) that
// OpenSSL's chain verification accepts; another root, a revoked device, a self-signed key and damaged
// files are refused with the reason; re-provisioning keeps the root and adds devices and revocations.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tee/errors.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

TEST(Provision, WritesRootDevicesAndCrlThatVerify) {
  test::TempDir dir;
  const ProvisionReport r = provision({dir.path(), 3, {}});
  EXPECT_TRUE(r.created_root);
  EXPECT_EQ(r.issued, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.devices, 3);
  EXPECT_EQ(mode_of(dir / "vendor_secret/root.key"), 0600u);
  EXPECT_EQ(mode_of(dir / "vendor_secret"), 0700u);
  EXPECT_EQ(mode_of(device_identity_path(dir.path(), 1)), 0600u);
  EXPECT_NE(read_text(dir / "vendor_root.crt").find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(read_text(dir / "vendor_root.crl").find("BEGIN X509 CRL"), std::string::npos);
  EXPECT_EQ(read_text(dir / "vendor_root.crt").find("PRIVATE KEY"), std::string::npos);

  const TrustAnchor anchor =
      TrustAnchor::load(vendor_root_path(dir.path()), TrustAnchor::crl_beside(vendor_root_path(dir.path())));
  EXPECT_EQ(anchor.revoked_count(), 0u);
  EXPECT_NE(anchor.root().subject().find("EMULATED"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    const DeviceIdentity id = DeviceIdentity::load_pem(device_identity_path(dir.path(), i));
    const ChainVerdict v = anchor.verify(id.certificate);
    EXPECT_TRUE(v.ok) << v.reason;
    EXPECT_FALSE(id.certificate.is_ca());
    EXPECT_NE(id.certificate.subject().find("device " + std::to_string(i)), std::string::npos);
    EXPECT_EQ(id.certificate.ed25519_public_key(), id.key.public_key());
  }
  // Serial numbers are unique.
  EXPECT_NE(DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate.serial_hex(),
            DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate.serial_hex());
}

TEST(Provision, AgainAddsDevicesUnderTheSameRootAndRevokes) {
  test::TempDir dir;
  provision({dir.path(), 2, {}});
  const std::string root_before = read_text(dir / "vendor_root.crt");
  const std::string dev0_before = read_text(device_identity_path(dir.path(), 0));
  const ProvisionReport r = provision({dir.path(), 4, {1}});
  EXPECT_FALSE(r.created_root);
  EXPECT_EQ(r.issued, (std::vector<int>{2, 3}));
  EXPECT_EQ(r.revoked, (std::vector<int>{1}));
  EXPECT_EQ(read_text(dir / "vendor_root.crt"), root_before);
  EXPECT_EQ(read_text(device_identity_path(dir.path(), 0)), dev0_before);

  const auto root = vendor_root_path(dir.path());
  const TrustAnchor anchor = TrustAnchor::load(root, TrustAnchor::crl_beside(root));
  EXPECT_EQ(anchor.revoked_count(), 1u);
  EXPECT_TRUE(anchor.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 3)).certificate).ok);
  const ChainVerdict revoked =
      anchor.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate);
  EXPECT_FALSE(revoked.ok);
  EXPECT_NE(revoked.reason.find("revoked"), std::string::npos) << revoked.reason;
  // Revocations accumulate; revoking twice changes nothing; an unknown device is refused.
  EXPECT_TRUE(provision({dir.path(), 0, {1}}).revoked.empty());
  EXPECT_EQ(provision({dir.path(), 0, {2}}).revoked_total, 2u);
  EXPECT_THROW(provision({dir.path(), 0, {9}}), InputError);
  // Without the CRL, the revoked device would pass: the verifier must load it (test_device_profile.cpp:
  // only an explicit opt-out runs without it).
  EXPECT_TRUE(TrustAnchor::load_without_revocation(root)
                  .verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate)
                  .ok);
}

TEST(Provision, AnotherRootsDevicesAreNotTrusted) {
  test::TempDir a, b;
  provision({a.path(), 1, {}});
  provision({b.path(), 1, {}});
  const TrustAnchor anchor =
      TrustAnchor::load(vendor_root_path(a.path()), TrustAnchor::crl_beside(vendor_root_path(a.path())));
  const ChainVerdict v =
      anchor.verify(DeviceIdentity::load_pem(device_identity_path(b.path(), 0)).certificate);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("not issued by the trusted vendor root"), std::string::npos) << v.reason;
  // The other root's own certificate is a CA, not a device, and not ours either.
  EXPECT_FALSE(anchor.verify(TrustAnchor::load_without_revocation(vendor_root_path(b.path())).root()).ok);
  // Our root itself presented as a device: a CA certificate is refused.
  const ChainVerdict self = anchor.verify(anchor.root());
  EXPECT_FALSE(self.ok);
}

TEST(Provision, DamagedFilesAreRefusedWithTheirName) {
  test::TempDir dir;
  provision({dir.path(), 2, {}});
  // A device file whose certificate belongs to another key.
  const std::string d0 = read_text(device_identity_path(dir.path(), 0));
  const std::string d1 = read_text(device_identity_path(dir.path(), 1));
  const auto cert_at = d1.find("-----BEGIN CERTIFICATE");
  std::ofstream(dir / "mixed.pem") << d0.substr(0, d0.find("-----BEGIN CERTIFICATE")) << d1.substr(cert_at);
  try {
    DeviceIdentity::load_pem(dir / "mixed.pem");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mixed.pem"), std::string::npos);
  }
  std::ofstream(dir / "garbage.crt") << "not a certificate";
  EXPECT_THROW(TrustAnchor::load_without_revocation(dir / "garbage.crt"), InputError);
  EXPECT_THROW(TrustAnchor::load(dir / "missing.crt", dir / "vendor_root.crl"), InputError);
  // A device certificate is not a root.
  EXPECT_THROW(TrustAnchor::load_without_revocation(device_identity_path(dir.path(), 0)), InputError);
  // A CRL signed by another root is refused.
  test::TempDir other;
  provision({other.path(), 0, {}});
  EXPECT_THROW(TrustAnchor::load(vendor_root_path(dir.path()), other / "vendor_root.crl"), InputError);
  // A vendor directory with a certificate but no key cannot mint.
  fs::remove(dir / "vendor_secret/root.key");
  EXPECT_THROW(provision({dir.path(), 3, {}}), InputError);
}

TEST(Certificate, FromDerRefusesAnythingButOneCertificate) {
  test::TempDir dir;
  provision({dir.path(), 1, {}});
  const auto der = DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate.der();
  EXPECT_EQ(Certificate::from_der(der).der(), der);
  auto longer = der;
  longer.push_back(0);
  EXPECT_THROW(Certificate::from_der(longer), IntegrityError);
  EXPECT_THROW(Certificate::from_der({}), IntegrityError);
  // Every truncation and a sweep of single-byte corruptions: refused or parsed, never a crash.
  for (std::size_t n = 0; n < der.size(); ++n)
    EXPECT_THROW(Certificate::from_der(ByteView(der).first(n)), IntegrityError) << n;
  std::uint32_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    auto bytes = der;
    state = state * 1664525u + 1013904223u;
    bytes[state % bytes.size()] ^= static_cast<std::uint8_t>(1u << ((state >> 8) % 8));
    try {
      const Certificate c = Certificate::from_der(bytes);
      (void)c.subject();
      (void)c.is_ca();
    } catch (const IntegrityError&) {
    }
  }
}

}  // namespace
}  // namespace tt::tee
