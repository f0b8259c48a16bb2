// Test-only: device certificates with chosen extensions, signed by a provisioned vendor's real root
// key, so that the chain verifies and only the device profile (tee/identity/x509.h) can refuse them.
// Production code mints certificates in tee/identity/vendor.cpp alone; this is the attacker's (or a careless
// vendor's) mint.
#pragma once
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tee/errors.h"
#include "tee/identity/keys.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"

namespace tt::tee::test {

struct Extension {
  int nid;            // NID_basic_constraints, NID_key_usage, NID_ext_key_usage, ...
  std::string value;  // OpenSSL config syntax: "critical,CA:FALSE", "digitalSignature", "serverAuth", ...
};

// The extensions `teetrain provision` gives a device: the profile a verifier accepts.
inline std::vector<Extension> device_profile_extensions() {
  return {{NID_basic_constraints, "critical,CA:FALSE"},
          {NID_key_usage, "critical,digitalSignature"},
          {NID_ext_key_usage, std::string("critical,") + kDevicePurposeOid}};
}

// A certificate for `key`, issued by the vendor in `vendor_dir` (its secret root key signs), with
// exactly `extensions` (none: an X.509 v1 certificate, as old tools write them).
// `serial_hex` empty: serial 4242.
inline Certificate mint_device_certificate(const std::filesystem::path& vendor_dir, const Ed25519KeyPair& key,
                                           const std::vector<Extension>& extensions,
                                           const std::string& serial_hex = "") {
  const Ed25519KeyPair root_key = Ed25519KeyPair::load_pem(vendor_dir / "vendor_secret" / "root.key");
  const Certificate root = Certificate::load_pem(vendor_root_path(vendor_dir));
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), extensions.empty() ? 0 : 2) != 1) throw_openssl_error("X509_new");
  BIGNUM* bn = nullptr;
  if (BN_hex2bn(&bn, serial_hex.empty() ? "1092" : serial_hex.c_str()) == 0) throw_openssl_error("serial");
  const bool serial_set = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(bn);
  if (!serial_set) throw_openssl_error("serial");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("test device"),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(root.native()));
  if (X509_set_pubkey(cert.get(), key.native()) != 1) throw_openssl_error("X509_set_pubkey");
  for (const Extension& e : extensions) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, root.native(), cert.get(), nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, e.nid, e.value.c_str());
    const bool added = ext != nullptr && X509_add_ext(cert.get(), ext, -1) == 1;
    X509_EXTENSION_free(ext);
    if (!added) throw_openssl_error("test certificate extension " + e.value);
  }
  if (X509_sign(cert.get(), root_key.native(), nullptr) <= 0) throw_openssl_error("X509_sign");
  return Certificate(std::move(cert));
}

// A revocation list signed by the vendor in `vendor_dir` (its secret root key), written to `out` (PEM):
// current from `last_update_s` until `next_update_s` seconds from now (no nextUpdate when null), with
// the cRLNumber extensions `numbers` (none: an older provision's list; two: a malformed one; a
// negative one: a malformed number) and revoking `serials_hex`. What an attacker holding an old genuine
// list, or a careless vendor, puts on a disk; production lists come from vendor.cpp alone.
struct CrlSpec {
  std::vector<long long> numbers;
  long last_update_s = -3600;
  std::optional<long> next_update_s = 7L * 86400L;
  std::vector<std::string> serials_hex;
};
inline void mint_crl(const std::filesystem::path& vendor_dir, const CrlSpec& spec,
                     const std::filesystem::path& out) {
  const Ed25519KeyPair root_key = Ed25519KeyPair::load_pem(vendor_dir / "vendor_secret" / "root.key");
  const Certificate root = Certificate::load_pem(vendor_root_path(vendor_dir));
  std::unique_ptr<X509_CRL, decltype(&X509_CRL_free)> crl(X509_CRL_new(), X509_CRL_free);
  if (!crl || X509_CRL_set_version(crl.get(), 1) != 1 ||
      X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(root.native())) != 1)
    throw_openssl_error("test CRL");
  std::unique_ptr<ASN1_TIME, decltype(&ASN1_TIME_free)> last(X509_gmtime_adj(nullptr, spec.last_update_s),
                                                             ASN1_TIME_free);
  if (!last || X509_CRL_set1_lastUpdate(crl.get(), last.get()) != 1)
    throw_openssl_error("test CRL lastUpdate");
  if (spec.next_update_s) {
    std::unique_ptr<ASN1_TIME, decltype(&ASN1_TIME_free)> next(X509_gmtime_adj(nullptr, *spec.next_update_s),
                                                               ASN1_TIME_free);
    if (!next || X509_CRL_set1_nextUpdate(crl.get(), next.get()) != 1)
      throw_openssl_error("test CRL nextUpdate");
  }
  for (const long long n : spec.numbers) {
    std::unique_ptr<ASN1_INTEGER, decltype(&ASN1_INTEGER_free)> v(ASN1_INTEGER_new(), ASN1_INTEGER_free);
    if (!v || ASN1_INTEGER_set_int64(v.get(), n) != 1 ||
        X509_CRL_add1_ext_i2d(crl.get(), NID_crl_number, v.get(), 0, X509V3_ADD_APPEND) != 1)
      throw_openssl_error("test CRL number");
  }
  for (const std::string& hex : spec.serials_hex) {
    BIGNUM* bn = nullptr;
    X509_REVOKED* r = X509_REVOKED_new();
    ASN1_INTEGER* serial = BN_hex2bn(&bn, hex.c_str()) != 0 ? BN_to_ASN1_INTEGER(bn, nullptr) : nullptr;
    BN_free(bn);
    const bool added = serial != nullptr && r != nullptr && X509_REVOKED_set_serialNumber(r, serial) == 1 &&
                       X509_REVOKED_set_revocationDate(r, last.get()) == 1 &&
                       X509_CRL_add0_revoked(crl.get(), r) == 1;
    ASN1_INTEGER_free(serial);
    if (!added) {
      X509_REVOKED_free(r);
      throw_openssl_error("test CRL entry");
    }
  }
  if (X509_CRL_sign(crl.get(), root_key.native(), nullptr) <= 0) throw_openssl_error("test CRL signature");
  std::unique_ptr<BIO, decltype(&BIO_free)> file(BIO_new_file(out.c_str(), "w"), BIO_free);
  if (!file || PEM_write_bio_X509_CRL(file.get(), crl.get()) != 1) throw_openssl_error("test CRL file");
}

// The PEM text of a certificate, to write beside a key as `teetrain provision` does.
inline std::string pem_of(const Certificate& cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> mem(BIO_new(BIO_s_mem()), BIO_free);
  if (!mem || PEM_write_bio_X509(mem.get(), cert.native()) != 1) throw_openssl_error("PEM certificate");
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

}  // namespace tt::tee::test
