#include "tee/x509.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt::tee {
namespace fs = std::filesystem;

void X509Free::operator()(x509_st* c) const noexcept {
  X509_free(c);
}
void X509CrlFree::operator()(X509_crl_st* c) const noexcept {
  X509_CRL_free(c);
}

namespace {

struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free_all(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct StoreFree {
  void operator()(X509_STORE* s) const noexcept { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const noexcept { X509_STORE_CTX_free(c); }
};

// The file's bytes in a memory BIO (a secure one: a device identity PEM holds its private key), read
// through the one reader of user-given files: a FIFO or device is refused, never opened blocking.
BioPtr open_file(const fs::path& path, const std::string& what) {
  std::vector<std::uint8_t> pem = read_regular_file(path, what, kMaxPemFileBytes);
  BioPtr bio(BIO_new(BIO_s_secmem()));
  const bool ok = bio && (pem.empty() || BIO_write(bio.get(), pem.data(), static_cast<int>(pem.size())) ==
                                             static_cast<int>(pem.size()));
  OPENSSL_cleanse(pem.data(), pem.size());
  if (!ok) {
    clear_openssl_errors();
    throw CryptoError(what + " '" + path.string() + "': cannot buffer the file");
  }
  return bio;
}

std::string bio_text(BIO* mem) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem, &data);
  return len > 0 ? std::string(data, static_cast<std::size_t>(len)) : std::string();
}

std::string name_text(const X509_NAME* name) {
  BioPtr mem(BIO_new(BIO_s_mem()));
  if (!mem || X509_NAME_print_ex(mem.get(), name, 0, XN_FLAG_RFC2253) < 0) return "?";
  return bio_text(mem.get());
}

std::string time_text(const ASN1_TIME* t) {
  BioPtr mem(BIO_new(BIO_s_mem()));
  if (!mem || ASN1_TIME_print(mem.get(), t) != 1) return "?";
  return bio_text(mem.get());
}

// The refusal a verifier reports for an OpenSSL chain error, in words a student can act on.
std::string chain_reason(int err, const Certificate& leaf) {
  const std::string detail = X509_verify_cert_error_string(err);
  switch (err) {
    case X509_V_ERR_CERT_REVOKED:
      return "device certificate revoked by the vendor (serial " + leaf.serial_hex() + ")";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return "certificate not issued by the trusted vendor root (" + detail + ")";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
    case X509_V_ERR_CRL_HAS_EXPIRED:
    case X509_V_ERR_CRL_NOT_YET_VALID:
      return "certificate or revocation list outside its validity period (" + detail + ")";
    default:
      return "certificate rejected (" + detail + ")";
  }
}

}  // namespace

// ---- Certificate ----

Certificate::Certificate(X509Ptr cert) : cert_(cert.release(), X509Free{}) {
  if (!cert_) throw std::invalid_argument("Certificate: null");
  unsigned char* out = nullptr;
  const int len = i2d_X509(cert_.get(), &out);
  if (len <= 0) throw_openssl_error("certificate DER encoding");
  der_.assign(out, out + len);
  OPENSSL_free(out);
}

Certificate Certificate::from_der(ByteView der) {
  if (der.empty() || der.size() > kMaxCertificateBytes)
    throw IntegrityError("malformed certificate: " + std::to_string(der.size()) + " bytes");
  const unsigned char* p = der.data();
  X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (!cert || p != der.data() + der.size()) {
    clear_openssl_errors();
    throw IntegrityError("malformed certificate: not one DER X.509 certificate");
  }
  return Certificate(std::move(cert));
}

Certificate Certificate::load_pem(const fs::path& path) {
  BioPtr bio = open_file(path, "certificate");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    clear_openssl_errors();
    throw InputError("certificate '" + path.string() + "': no PEM certificate in the file");
  }
  return Certificate(std::move(cert));
}

std::string Certificate::subject() const {
  return name_text(X509_get_subject_name(cert_.get()));
}

std::string Certificate::serial_hex() const {
  const ASN1_INTEGER* s = X509_get0_serialNumber(cert_.get());
  return to_hex(ByteView(ASN1_STRING_get0_data(s), static_cast<std::size_t>(ASN1_STRING_length(s))));
}

bool Certificate::is_ca() const {
  return X509_check_ca(cert_.get()) != 0;
}

PublicKey Certificate::ed25519_public_key() const {
  const EVP_PKEY* k = X509_get0_pubkey(cert_.get());
  PublicKey pub{};
  std::size_t len = pub.size();
  if (k == nullptr || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519 ||
      EVP_PKEY_get_raw_public_key(k, pub.data(), &len) != 1 || len != pub.size()) {
    clear_openssl_errors();
    throw IntegrityError("certificate '" + subject() + "' does not carry an Ed25519 key");
  }
  return pub;
}

std::string Certificate::describe() const {
  return subject() + " (serial " + serial_hex() + ", issued by " +
         name_text(X509_get_issuer_name(cert_.get())) + ", valid " +
         time_text(X509_get0_notBefore(cert_.get())) + " .. " + time_text(X509_get0_notAfter(cert_.get())) +
         ")";
}

// ---- TrustAnchor ----

TrustAnchor::TrustAnchor(Certificate root, X509CrlPtr crl) : root_(std::move(root)), crl_(std::move(crl)) {}

fs::path TrustAnchor::crl_beside(const fs::path& root_pem) {
  fs::path crl = root_pem;
  crl.replace_extension(".crl");
  std::error_code ec;
  // Anything under the CRL's name is handed to the loader, which refuses what is not a regular file
  // (a FIFO, a directory): swapping the list for one must not quietly turn revocation off.
  return fs::exists(fs::symlink_status(crl, ec)) ? crl : fs::path();
}

TrustAnchor TrustAnchor::load(const fs::path& root_pem, const fs::path& crl_pem) {
  Certificate root = Certificate::load_pem(root_pem);
  EVP_PKEY* root_key = X509_get0_pubkey(root.native());
  if (!root.is_ca() || root_key == nullptr || X509_verify(root.native(), root_key) != 1) {
    clear_openssl_errors();
    throw InputError("trust root '" + root_pem.string() + "': not a self-signed CA certificate");
  }
  X509CrlPtr crl;
  if (!crl_pem.empty()) {
    BioPtr bio = open_file(crl_pem, "revocation list");
    crl.reset(PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr));
    if (!crl || X509_CRL_verify(crl.get(), root_key) != 1) {
      clear_openssl_errors();
      throw InputError("revocation list '" + crl_pem.string() +
                       "': not a PEM CRL signed by the trust root '" + root_pem.string() + "'");
    }
  }
  return TrustAnchor(std::move(root), std::move(crl));
}

ChainVerdict TrustAnchor::verify(const Certificate& leaf) const {
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), root_.native()) != 1)
    throw_openssl_error("X509 store setup");
  if (crl_) {
    if (X509_STORE_add_crl(store.get(), crl_.get()) != 1) throw_openssl_error("X509 store CRL");
    X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK);
  }
  if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf.native(), nullptr) != 1)
    throw_openssl_error("X509 store context");
  const int rc = X509_verify_cert(ctx.get());
  const int err = X509_STORE_CTX_get_error(ctx.get());
  clear_openssl_errors();
  if (rc != 1) return {false, chain_reason(err, leaf)};
  if (leaf.is_ca()) return {false, "certificate is a CA certificate, not a device identity"};
  try {
    (void)leaf.ed25519_public_key();
  } catch (const IntegrityError& e) {
    return {false, e.what()};
  }
  return {true, "ok"};
}

std::size_t TrustAnchor::revoked_count() const {
  if (!crl_) return 0;
  const STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl_.get());
  return revoked == nullptr ? 0 : static_cast<std::size_t>(sk_X509_REVOKED_num(revoked));
}

std::string TrustAnchor::describe() const {
  return "vendor root " + root_.subject() + " (serial " + root_.serial_hex().substr(0, 16) +
         ".., EMULATED), " +
         (crl_ ? "revocation list with " + std::to_string(revoked_count()) + " revoked device(s)"
               : std::string("no revocation list"));
}

// ---- DeviceIdentity ----

DeviceIdentity DeviceIdentity::load_pem(const fs::path& path) {
  Ed25519KeyPair key = Ed25519KeyPair::load_pem(path);
  Certificate cert = Certificate::load_pem(path);
  PublicKey cert_key{};
  try {
    cert_key = cert.ed25519_public_key();
  } catch (const IntegrityError& e) {
    throw InputError("device identity '" + path.string() + "': " + e.what());
  }
  if (!equal_ct(cert_key, key.public_key())) {
    throw InputError("device identity '" + path.string() +
                     "': the certificate is not for this private key (files mixed up?)");
  }
  return DeviceIdentity{std::move(key), std::move(cert)};
}

}  // namespace tt::tee
