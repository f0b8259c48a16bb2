#include "tests/support/test_vendor/vendor_pki.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <random>
#include <stdexcept>

#include "tee/errors.h"

namespace tt::tee::evidence::test_vendor {
namespace {

using Bio = CPtr<BIO, BIO_free>;

void check(bool ok, const std::string& what) {
  if (!ok) throw_openssl_error("test vendor: " + what);
}

const EVP_MD* digest_for(EVP_PKEY* key, SignStyle style) {
  if (style == SignStyle::RsaPss) return EVP_sha384();
  return EVP_PKEY_get_bits(key) > 256 ? EVP_sha384() : EVP_sha256();
}

void add_extension(X509* cert, const X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, const_cast<X509*>(issuer), cert, nullptr, nullptr, 0);
  CPtr<X509_EXTENSION, X509_EXTENSION_free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  check(ext && X509_add_ext(cert, ext.get(), -1) == 1, value);
}

}  // namespace

Key generate_key(KeyKind kind) {
  Key key(kind == KeyKind::Rsa    ? EVP_RSA_gen(2048)
          : kind == KeyKind::P256 ? EVP_EC_gen("P-256")
                                  : EVP_EC_gen("P-384"));
  check(key != nullptr, "key generation");
  return key;
}

void sign_cert(X509* cert, EVP_PKEY* issuer_key, SignStyle style) {
  CPtr<EVP_MD_CTX, EVP_MD_CTX_free> md(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  check(md && EVP_DigestSignInit(md.get(), &pctx, digest_for(issuer_key, style), nullptr, issuer_key) == 1,
        "sign init");
  if (style == SignStyle::RsaPss)
    check(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
              EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 48) == 1,
          "RSA-PSS parameters");
  check(X509_sign_ctx(cert, md.get()) > 0, "certificate signature");
}

Cert make_cert(const CertSpec& spec, EVP_PKEY* subject_key, const X509* issuer, EVP_PKEY* issuer_key) {
  Cert cert(X509_new());
  check(cert && X509_set_version(cert.get(), 2) == 1, "X509_new");
  check(ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), spec.serial) == 1, "serial");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), spec.not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.not_after_s);
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>("teetrain TEST vendor"), -1, -1,
                                   0) == 1 &&
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                                       -1, 0) == 1,
        "subject");
  const X509* signer = issuer != nullptr ? issuer : cert.get();
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1 &&
            X509_set_pubkey(cert.get(), subject_key) == 1,
        "issuer and key");
  add_extension(cert.get(), signer, NID_basic_constraints,
                spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add_extension(cert.get(), signer, NID_key_usage,
                spec.ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer != nullptr) add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid");
  sign_cert(cert.get(), issuer_key, spec.style);
  return cert;
}

void add_raw_extension(X509* cert, const char* oid, ByteView der) {
  CPtr<ASN1_OBJECT, ASN1_OBJECT_free> object(OBJ_txt2obj(oid, 1));
  CPtr<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free> data(ASN1_OCTET_STRING_new());
  check(object && data && ASN1_OCTET_STRING_set(data.get(), der.data(), static_cast<int>(der.size())) == 1,
        std::string("extension ") + oid);
  CPtr<X509_EXTENSION, X509_EXTENSION_free> ext(
      X509_EXTENSION_create_by_OBJ(nullptr, object.get(), 0, data.get()));
  check(ext && X509_add_ext(cert, ext.get(), -1) == 1, std::string("extension ") + oid);
}

void write_crl(const std::filesystem::path& out, const X509* issuer, EVP_PKEY* issuer_key,
               const CrlSpec& spec) {
  CPtr<X509_CRL, X509_CRL_free> crl(X509_CRL_new());
  check(crl && X509_CRL_set_version(crl.get(), 1) == 1 &&
            X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(issuer)) == 1,
        "CRL");
  CPtr<ASN1_TIME, ASN1_TIME_free> last(X509_gmtime_adj(nullptr, spec.last_update_s));
  CPtr<ASN1_TIME, ASN1_TIME_free> next(X509_gmtime_adj(nullptr, spec.next_update_s));
  CPtr<ASN1_INTEGER, ASN1_INTEGER_free> number(ASN1_INTEGER_new());
  check(last && next && number && X509_CRL_set1_lastUpdate(crl.get(), last.get()) == 1 &&
            X509_CRL_set1_nextUpdate(crl.get(), next.get()) == 1 && ASN1_INTEGER_set(number.get(), 1) == 1 &&
            X509_CRL_add1_ext_i2d(crl.get(), NID_crl_number, number.get(), 0, X509V3_ADD_APPEND) == 1,
        "CRL fields");
  for (const long s : spec.revoked) {
    CPtr<ASN1_INTEGER, ASN1_INTEGER_free> serial(ASN1_INTEGER_new());
    X509_REVOKED* revoked = X509_REVOKED_new();
    if (!serial || ASN1_INTEGER_set(serial.get(), s) != 1 || revoked == nullptr ||
        X509_REVOKED_set_serialNumber(revoked, serial.get()) != 1 ||
        X509_REVOKED_set_revocationDate(revoked, last.get()) != 1 ||
        X509_CRL_add0_revoked(crl.get(), revoked) != 1) {
      X509_REVOKED_free(revoked);
      check(false, "CRL entry");
    }
  }
  check(X509_CRL_sign(crl.get(), issuer_key, digest_for(issuer_key, SignStyle::Ecdsa)) > 0, "CRL signature");
  Bio file(BIO_new_file(out.c_str(), "w"));
  check(file && PEM_write_bio_X509_CRL(file.get(), crl.get()) == 1, "CRL file " + out.string());
}

void write_key(const std::filesystem::path& path, EVP_PKEY* key) {
  Bio file(BIO_new_file(path.c_str(), "w"));
  check(file && PEM_write_bio_PrivateKey(file.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "key file " + path.string());
}

Key read_key(const std::filesystem::path& path) {
  Bio file(BIO_new_file(path.c_str(), "r"));
  Key key(file ? PEM_read_bio_PrivateKey(file.get(), nullptr, nullptr, nullptr) : nullptr);
  check(key != nullptr, "key file " + path.string() + " (make the roots first: tt_test_vendor roots)");
  return key;
}

void write_cert(const std::filesystem::path& path, const X509* cert) {
  Bio file(BIO_new_file(path.c_str(), "w"));
  check(file && PEM_write_bio_X509(file.get(), cert) == 1, "certificate file " + path.string());
}

Cert read_cert(const std::filesystem::path& path) {
  Bio file(BIO_new_file(path.c_str(), "r"));
  Cert cert(file ? PEM_read_bio_X509(file.get(), nullptr, nullptr, nullptr) : nullptr);
  check(cert != nullptr,
        "certificate file " + path.string() + " (make the roots first: tt_test_vendor roots)");
  return cert;
}

std::string pem_of(const X509* cert) {
  Bio mem(BIO_new(BIO_s_mem()));
  check(mem && PEM_write_bio_X509(mem.get(), cert) == 1, "PEM certificate");
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem.get(), &data);
  return {data, static_cast<std::size_t>(len)};
}

std::vector<std::uint8_t> sign_raw(EVP_PKEY* key, ByteView data, std::size_t scalar_bytes) {
  CPtr<EVP_MD_CTX, EVP_MD_CTX_free> md(EVP_MD_CTX_new());
  std::size_t len = 0;
  check(md && EVP_DigestSignInit(md.get(), nullptr, digest_for(key, SignStyle::Ecdsa), nullptr, key) == 1 &&
            EVP_DigestSign(md.get(), nullptr, &len, data.data(), data.size()) == 1,
        "ECDSA");
  std::vector<std::uint8_t> der(len);
  check(EVP_DigestSign(md.get(), der.data(), &len, data.data(), data.size()) == 1, "ECDSA");
  const unsigned char* p = der.data();
  CPtr<ECDSA_SIG, ECDSA_SIG_free> sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(len)));
  check(sig != nullptr, "ECDSA signature");
  std::vector<std::uint8_t> out(2 * scalar_bytes);
  const int n = static_cast<int>(scalar_bytes);
  check(BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), out.data(), n) == n &&
            BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), out.data() + scalar_bytes, n) == n,
        "ECDSA r || s");
  return out;
}

std::vector<std::uint8_t> p256_xy(EVP_PKEY* key) {
  std::vector<std::uint8_t> point(65);  // 0x04 || x || y
  std::size_t len = 0;
  check(EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point.data(), point.size(),
                                        &len) == 1 &&
            len == 65,
        "P-256 public key");
  return {point.begin() + 1, point.end()};
}

void set_le(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.at(at + i) = static_cast<std::uint8_t>(value >> (8 * i));
}

void put_le(std::vector<std::uint8_t>& out, std::uint64_t value, std::size_t bytes) {
  const std::size_t at = out.size();
  out.resize(at + bytes);
  set_le(out, at, value, bytes);
}

void put_bytes(std::vector<std::uint8_t>& out, ByteView bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void set_bytes(std::vector<std::uint8_t>& out, std::size_t at, ByteView bytes) {
  if (at + bytes.size() > out.size()) throw std::out_of_range("test vendor: field past the message");
  std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
}

CertSpec leaf_spec(const std::string& common_name, Variant variant) {
  std::random_device random;
  const long serial = 0x10000 + static_cast<long>(random() & 0xffffff);
  switch (variant) {
    case Variant::Good:
      return {common_name, serial, -3600, 30L * 86400L, false, SignStyle::Ecdsa};
    case Variant::Revoked:
      return {common_name, kRevokedSerial, -3600, 30L * 86400L, false, SignStyle::Ecdsa};
    case Variant::Expired:
      return {common_name, serial, -2L * 86400L, -86400L, false, SignStyle::Ecdsa};
  }
  return {};
}

}  // namespace tt::tee::evidence::test_vendor
