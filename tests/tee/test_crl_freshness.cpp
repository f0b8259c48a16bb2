// Revocation list freshness (Note [Revocation list freshness], tee/identity/x509.h): provision numbers
// every list it issues and keeps it current for a week; a trust anchor refuses a genuine list past its
// nextUpdate, without one or without a CRL number unless stale lists are accepted explicitly, and an
// expired list accepted that way still revokes what it names; malformed numbers are refused.
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <string>

#include "tee/errors.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"
#include "tests/tee/cert_factory.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

namespace fs = std::filesystem;

fs::path root_of(const fs::path& dir) {
  return vendor_root_path(dir);
}
fs::path crl_of(const fs::path& dir) {
  return TrustAnchor::crl_beside(vendor_root_path(dir));
}
std::string serial_of(const fs::path& dir, int device) {
  return DeviceIdentity::load_pem(device_identity_path(dir, device)).certificate.serial_hex();
}

// Seconds from the list's lastUpdate to its nextUpdate, as OpenSSL reads the file.
long validity_seconds(const fs::path& crl_pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_file(crl_pem.c_str(), "r"), BIO_free);
  std::unique_ptr<X509_CRL, decltype(&X509_CRL_free)> crl(
      in ? PEM_read_bio_X509_CRL(in.get(), nullptr, nullptr, nullptr) : nullptr, X509_CRL_free);
  int days = 0, seconds = 0;
  if (!crl || ASN1_TIME_diff(&days, &seconds, X509_CRL_get0_lastUpdate(crl.get()),
                             X509_CRL_get0_nextUpdate(crl.get())) != 1)
    return -1;
  return days * 86400L + seconds;
}

ProvisionOptions options(const fs::path& dir) {
  ProvisionOptions o;
  o.dir = dir;
  o.devices = 2;
  return o;
}

TEST(CrlFreshness, ProvisionNumbersEveryListAndKeepsItCurrentForAWeek) {
  test::TempDir dir;
  ProvisionOptions o = options(dir.path());
  ProvisionReport r = provision(o);
  EXPECT_TRUE(r.issued_crl);
  EXPECT_EQ(r.crl.number, 1u);
  EXPECT_TRUE(r.crl.numbered);
  EXPECT_FALSE(r.crl.expired);
  EXPECT_EQ(validity_seconds(crl_of(dir.path())), 7 * 86400L + 3600);  // back-dated an hour
  const TrustAnchor first = TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()));
  ASSERT_TRUE(first.crl_facts());
  EXPECT_EQ(first.crl_facts()->number, 1u);
  EXPECT_EQ(first.crl_facts()->next_update, r.crl.next_update);
  EXPECT_NE(first.describe().find("revocation list number 1, next update 20"), std::string::npos)
      << first.describe();

  o.revoke = {1};
  EXPECT_EQ(provision(o).crl.number, 2u);  // a revocation: the next list
  o.revoke.clear();
  r = provision(o);  // nothing changed: the same list
  EXPECT_FALSE(r.issued_crl);
  EXPECT_EQ(r.crl.number, 2u);
  o.renew_crl = true;
  o.crl_days = 1;
  r = provision(o);  // the vendor's re-issue before the nextUpdate
  EXPECT_TRUE(r.issued_crl);
  EXPECT_EQ(r.crl.number, 3u);
  EXPECT_EQ(validity_seconds(crl_of(dir.path())), 86400L + 3600);
  o.renew_crl = false;
  fs::remove(crl_of(dir.path()));  // rewritten from the vendor's record, numbered after it
  r = provision(o);
  EXPECT_EQ(r.crl.number, 4u);
  EXPECT_EQ(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path())).revoked_count(), 1u);
  o.crl_days = 0;
  EXPECT_THROW(provision(o), InputError);
}

TEST(CrlFreshness, ProvisionReplacesAStaleList) {
  test::TempDir dir;
  provision(options(dir.path()));
  test::mint_crl(dir.path(),
                 {.numbers = {6}, .last_update_s = -8 * 86400L, .next_update_s = -86400L, .serials_hex = {}},
                 crl_of(dir.path()));
  const ProvisionReport r = provision(options(dir.path()));
  EXPECT_TRUE(r.issued_crl);
  EXPECT_EQ(r.crl.number, 7u);  // after the highest number either copy carries
  EXPECT_FALSE(r.crl.expired);

  // An older genuine list put back in place of the public one: the vendor issues its current list again.
  const fs::path older = dir / "older.crl";
  fs::copy_file(crl_of(dir.path()), older);
  ProvisionOptions revoke = options(dir.path());
  revoke.revoke = {1};
  EXPECT_EQ(provision(revoke).crl.number, 8u);
  fs::copy_file(older, crl_of(dir.path()), fs::copy_options::overwrite_existing);
  const ProvisionReport again = provision(options(dir.path()));
  EXPECT_TRUE(again.issued_crl);
  EXPECT_EQ(again.crl.number, 9u);
  EXPECT_EQ(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path())).revoked_count(), 1u);
}

TEST(CrlFreshness, AnExpiredListIsRefusedUnlessAcceptedAndStillRevokes) {
  test::TempDir dir;
  provision(options(dir.path()));
  test::mint_crl(dir.path(),
                 {.numbers = {5},
                  .last_update_s = -8 * 86400L,
                  .next_update_s = -86400L,
                  .serials_hex = {serial_of(dir.path(), 1)}},
                 crl_of(dir.path()));
  try {
    TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()));
    FAIL() << "an expired list was accepted";
  } catch (const IntegrityError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("revocation list '" + crl_of(dir.path()).string() + "' (number 5) expired at 20"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("--allow-expired-crl"), std::string::npos) << m;
  }
  const TrustAnchor stale = TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()), StaleCrl::Accept);
  ASSERT_TRUE(stale.crl_facts());
  EXPECT_TRUE(stale.crl_facts()->expired);
  EXPECT_EQ(stale.crl_facts()->number, 5u);
  EXPECT_NE(stale.describe().find("(EXPIRED)"), std::string::npos) << stale.describe();
  // Accepted, the expired list still revokes what it names; OpenSSL's own expiry check stays quiet.
  const ChainVerdict revoked =
      stale.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 1)).certificate);
  EXPECT_FALSE(revoked.ok);
  EXPECT_NE(revoked.reason.find("revoked"), std::string::npos) << revoked.reason;
  const ChainVerdict fine =
      stale.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate);
  EXPECT_TRUE(fine.ok) << fine.reason;
}

TEST(CrlFreshness, AListWithoutANumberOrNextUpdateIsStale) {
  test::TempDir dir;
  provision(options(dir.path()));
  test::mint_crl(dir.path(),
                 {.numbers = {}, .last_update_s = -3600, .next_update_s = 86400L, .serials_hex = {}},
                 crl_of(dir.path()));
  EXPECT_THROW(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path())), IntegrityError);
  const TrustAnchor old = TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()), StaleCrl::Accept);
  EXPECT_FALSE(old.crl_facts()->numbered);
  EXPECT_EQ(old.crl_facts()->number, 0u);  // an older provision's list counts as number 0
  EXPECT_NE(old.describe().find("without a CRL number"), std::string::npos) << old.describe();
  EXPECT_TRUE(old.verify(DeviceIdentity::load_pem(device_identity_path(dir.path(), 0)).certificate).ok);

  test::mint_crl(dir.path(),
                 {.numbers = {3}, .last_update_s = -3600, .next_update_s = std::nullopt, .serials_hex = {}},
                 crl_of(dir.path()));
  EXPECT_THROW(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path())), IntegrityError);
  EXPECT_TRUE(
      TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()), StaleCrl::Accept).crl_facts()->expired);
}

TEST(CrlFreshness, MalformedNumbersAreRefused) {
  test::TempDir dir;
  provision(options(dir.path()));
  for (const std::vector<long long>& numbers : {std::vector<long long>{-1}, std::vector<long long>{2, 3}}) {
    test::mint_crl(dir.path(),
                   {.numbers = numbers, .last_update_s = -3600, .next_update_s = 86400L, .serials_hex = {}},
                   crl_of(dir.path()));
    EXPECT_THROW(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path()), StaleCrl::Accept), InputError);
  }
  // The largest number accepted is 2^63 - 1.
  test::mint_crl(
      dir.path(),
      {.numbers = {0x7fffffffffffffffLL}, .last_update_s = -3600, .next_update_s = 86400L, .serials_hex = {}},
      crl_of(dir.path()));
  EXPECT_EQ(TrustAnchor::load(root_of(dir.path()), crl_of(dir.path())).crl_facts()->number, kMaxCrlNumber);
  ProvisionOptions renew = options(dir.path());
  renew.renew_crl = true;
  EXPECT_THROW(provision(renew), InputError);  // no number left for the next list
}

}  // namespace
}  // namespace tt::tee
