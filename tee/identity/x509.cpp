#include "tee/identity/x509.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <stdexcept>

#include "tee/errors.h"
#include "tee/openssl_ptr.h"
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

using BioPtr = CPtr<BIO, BIO_free_all>;

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

// "2026-12-06T08:50:32Z" (UTC, ISO 8601): how banners, summaries and messages print a list's dates.
std::string iso_time(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return "?";
  char buf[32] = {};
  return std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0 ? buf : "?";
}

// The refusal a verifier reports for an OpenSSL chain error, in words a student can act on.
std::string serial_text(const X509* cert) {
  const ASN1_INTEGER* s = X509_get0_serialNumber(cert);
  return to_hex(ByteView(ASN1_STRING_get0_data(s), static_cast<std::size_t>(ASN1_STRING_length(s))));
}

// `failing` is the certificate the error is about (the revoked one, which need not be the leaf).
std::string chain_reason(int err, const X509* failing) {
  const std::string detail = X509_verify_cert_error_string(err);
  switch (err) {
    case X509_V_ERR_CERT_REVOKED:
      return "device certificate revoked by the vendor (serial " + serial_text(failing) + ")";
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

std::string Certificate::issuer() const {
  return name_text(X509_get_issuer_name(cert_.get()));
}

std::string Certificate::serial_hex() const {
  return serial_text(cert_.get());
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
  return subject() + " (serial " + serial_hex() + ", issued by " + issuer() + ", valid " +
         time_text(X509_get0_notBefore(cert_.get())) + " .. " + time_text(X509_get0_notAfter(cert_.get())) +
         ")";
}

std::vector<Certificate> certificates_from_pem(std::string_view pem, const std::string& what) {
  if (pem.size() > kMaxChainCertificates * kMaxCertificateBytes * 2)
    throw InputError(what + ": " + std::to_string(pem.size()) + " bytes is too long for a certificate chain");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw_openssl_error("certificate chain buffer");
  std::vector<Certificate> chain;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    if (chain.size() == kMaxChainCertificates)
      throw InputError(what + ": more than " + std::to_string(kMaxChainCertificates) + " certificates");
    chain.emplace_back(std::move(cert));
  }
  // The loop ends at the first PEM block it cannot read: the end of the text, or a damaged block.
  const unsigned long last = ERR_peek_last_error();
  clear_openssl_errors();
  const bool at_end = ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (chain.empty() || !at_end)
    throw InputError(what + (chain.empty() ? ": no PEM certificate in it"
                                           : ": certificate " + std::to_string(chain.size() + 1) +
                                                 " is damaged (not a PEM X.509 certificate)"));
  return chain;
}

// ---- Device profile ----

namespace {

std::string oid_text(const ASN1_OBJECT* oid) {
  char buf[128] = {};
  OBJ_obj2txt(buf, sizeof buf, oid, 1);  // dotted numbers: what `openssl x509 -text` shows for ours
  return buf;
}

// extendedKeyUsage must name the vendor's device purpose and nothing else: one key, one job.
ChainVerdict check_device_purpose(const Certificate& leaf) {
  int critical = 0;
  CPtr<EXTENDED_KEY_USAGE, EXTENDED_KEY_USAGE_free> eku(static_cast<EXTENDED_KEY_USAGE*>(
      X509_get_ext_d2i(leaf.native(), NID_ext_key_usage, &critical, nullptr)));
  clear_openssl_errors();
  if (!eku) {
    return {false, critical == -2
                       ? std::string("device certificate carries two extendedKeyUsage extensions")
                       : "device certificate has no extendedKeyUsage (the vendor's device purpose " +
                             std::string(kDevicePurposeOid) + " is required)"};
  }
  CPtr<ASN1_OBJECT, ASN1_OBJECT_free> device(OBJ_txt2obj(kDevicePurposeOid, 1));
  if (!device) throw_openssl_error("device purpose OID");
  const int n = sk_ASN1_OBJECT_num(eku.get());
  for (int i = 0; i < n; ++i) {
    const ASN1_OBJECT* purpose = sk_ASN1_OBJECT_value(eku.get(), i);
    if (OBJ_cmp(purpose, device.get()) != 0)
      return {false, "device certificate's extendedKeyUsage names a foreign purpose " + oid_text(purpose) +
                         " (a device identity carries only " + kDevicePurposeOid + ")"};
  }
  if (n == 0) return {false, "device certificate's extendedKeyUsage is empty"};
  return {true, "ok"};
}

}  // namespace

ChainVerdict check_device_profile(const Certificate& leaf) {
  X509* cert = leaf.native();
  if (X509_get_ext_count(cert) == 0)
    return {false, "device certificate has no extensions (not the vendor's device profile)"};
  const std::uint32_t flags = X509_get_extension_flags(cert);  // also caches the parsed extensions
  if ((flags & EXFLAG_INVALID) != 0) return {false, "device certificate has malformed extensions"};
  if ((flags & EXFLAG_CA) != 0 || leaf.is_ca())
    return {false, "certificate is a CA certificate (CA:TRUE), not a device identity"};
  if ((flags & EXFLAG_BCONS) == 0) return {false, "device certificate has no basicConstraints CA:FALSE"};
  const std::uint32_t usage = X509_get_key_usage(cert);
  if ((flags & EXFLAG_KUSAGE) == 0 || (usage & KU_DIGITAL_SIGNATURE) == 0)
    return {false, "device certificate lacks the digitalSignature key usage"};
  if ((usage & (KU_KEY_CERT_SIGN | KU_CRL_SIGN)) != 0)
    return {false, "device certificate's key usage allows signing certificates or CRLs"};
  return check_device_purpose(leaf);
}

// ---- Revocation lists ----

std::string CrlFacts::describe() const {
  std::string s = numbered ? "number " + std::to_string(number) : "without a CRL number (taken as number 0)";
  s += next_update.empty() ? ", no next update" : ", next update " + next_update;
  return expired ? s + " (EXPIRED)" : s;
}

CrlFacts read_crl_facts(const X509_CRL* crl, const fs::path& path) {
  CrlFacts f;
  f.path = path;
  int found = 0;  // -1: absent, -2: repeated, otherwise present (null: it did not parse)
  CPtr<ASN1_INTEGER, ASN1_INTEGER_free> number(
      static_cast<ASN1_INTEGER*>(X509_CRL_get_ext_d2i(crl, NID_crl_number, &found, nullptr)));
  std::uint64_t value = 0;
  const bool ok =
      number ? ASN1_INTEGER_get_uint64(&value, number.get()) == 1 && value <= kMaxCrlNumber : found == -1;
  clear_openssl_errors();
  if (!ok) {
    throw InputError("revocation list '" + printable_path(path) + "': " +
                     (found == -2 ? std::string("two CRL number extensions")
                                  : "its CRL number is not a number from 0 to 2^63-1"));
  }
  f.numbered = number != nullptr;
  f.number = value;
  const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crl);
  f.next_update = next != nullptr ? iso_time(next) : "";
  // X509_cmp_current_time: -1 at or before now, 1 after, 0 on a malformed time (then stale too).
  f.expired = next == nullptr || X509_cmp_current_time(next) <= 0;
  return f;
}

namespace {

// Note [Revocation list freshness]: a list that cannot show it is current is refused unless the
// verifier accepts stale lists explicitly.
void refuse_stale(const CrlFacts& f) {
  const std::string list = "revocation list '" + printable_path(f.path) + "'";
  const std::string dir = f.path.parent_path().empty() ? "." : printable_path(f.path.parent_path());
  const std::string fix = "; put the vendor's current list there (`teetrain provision --out " + dir +
                          " --renew-crl` issues one), or pass --allow-expired-crl to accept it (flagged in "
                          "every report)";
  if (!f.numbered)
    throw IntegrityError(list + " has no CRL number, so an older list could stand in for it" + fix);
  const std::string which = list + " (number " + std::to_string(f.number) + ")";
  if (f.next_update.empty()) throw IntegrityError(which + " has no nextUpdate, so it never goes stale" + fix);
  if (f.expired)
    throw IntegrityError(which + " expired at " + f.next_update +
                         " (its nextUpdate): it may miss later revocations" + fix);
}

}  // namespace

// ---- TrustAnchor ----

TrustAnchor::TrustAnchor(Certificate root, X509CrlPtr crl, std::optional<CrlFacts> facts, StaleCrl stale)
    : root_(std::move(root)), crl_(std::move(crl)), facts_(std::move(facts)), stale_(stale) {}

fs::path TrustAnchor::crl_beside(const fs::path& root_pem) {
  fs::path crl = root_pem;
  crl.replace_extension(".crl");
  return crl;
}

namespace {

// The root certificate of an anchor: a self-signed CA (InputError naming the file otherwise).
Certificate load_root(const fs::path& root_pem) {
  Certificate root = Certificate::load_pem(root_pem);
  EVP_PKEY* root_key = X509_get0_pubkey(root.native());
  if (!root.is_ca() || root_key == nullptr || X509_verify(root.native(), root_key) != 1) {
    clear_openssl_errors();
    throw InputError("trust root '" + root_pem.string() + "': not a self-signed CA certificate");
  }
  return root;
}

}  // namespace

TrustAnchor TrustAnchor::load(const fs::path& root_pem, const fs::path& crl_pem, StaleCrl stale) {
  Certificate root = load_root(root_pem);
  if (crl_pem.empty())
    throw InputError("trust root '" + root_pem.string() + "': no revocation list given (expected " +
                     crl_beside(root_pem).string() + ")");
  BioPtr bio = open_file(crl_pem, "revocation list");
  X509CrlPtr crl(PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr));
  if (!crl || X509_CRL_verify(crl.get(), X509_get0_pubkey(root.native())) != 1) {
    clear_openssl_errors();
    throw InputError("revocation list '" + crl_pem.string() + "': not a PEM CRL signed by the trust root '" +
                     root_pem.string() + "'");
  }
  CrlFacts facts = read_crl_facts(crl.get(), crl_pem);
  if (stale == StaleCrl::Refuse) refuse_stale(facts);
  return TrustAnchor(std::move(root), std::move(crl), std::move(facts), stale);
}

TrustAnchor TrustAnchor::load_without_revocation(const fs::path& root_pem) {
  return TrustAnchor(load_root(root_pem), nullptr, std::nullopt, StaleCrl::Refuse);
}

namespace {

// A list that does not cover a certificate of the path is no refusal when the user gave lists only for
// some issuers (RevocationScope::WhereGiven); every other error still is.
int skip_missing_crl(int ok, X509_STORE_CTX* ctx) {
  return ok == 0 && X509_STORE_CTX_get_error(ctx) == X509_V_ERR_UNABLE_TO_GET_CRL ? 1 : ok;
}
// A list past its nextUpdate still revokes what it names when the verifier accepts stale lists
// (StaleCrl::Accept); OpenSSL would refuse the whole path instead.
int skip_expired_crl(int ok, X509_STORE_CTX* ctx) {
  return ok == 0 && X509_STORE_CTX_get_error(ctx) == X509_V_ERR_CRL_HAS_EXPIRED ? 1 : ok;
}
int skip_missing_or_expired_crl(int ok, X509_STORE_CTX* ctx) {
  return skip_expired_crl(skip_missing_crl(ok, ctx), ctx);
}

// The verify callback for a path's options: which CRL errors are not refusals.
X509_STORE_CTX_verify_cb verify_callback(const PathOptions& options) {
  const bool where_given = options.revocation == RevocationScope::WhereGiven;
  if (options.stale_crl == StaleCrl::Accept)
    return where_given ? skip_missing_or_expired_crl : skip_expired_crl;
  return where_given ? skip_missing_crl : nullptr;
}

struct X509StackFree {
  void operator()(STACK_OF(X509) * s) const noexcept { sk_X509_free(s); }
};

}  // namespace

PathOptions sent_chain_options(const std::vector<Certificate>& chain,
                               std::vector<std::shared_ptr<X509_crl_st>> crls,
                               std::optional<std::int64_t> at_unix_time) {
  PathOptions options;
  if (!chain.empty()) options.intermediates.assign(chain.begin() + 1, chain.end());
  options.revocation = crls.empty() ? RevocationScope::None : RevocationScope::WhereGiven;
  options.crls = std::move(crls);
  options.at_unix_time = at_unix_time;
  return options;
}

ChainVerdict verify_certificate_path(const Certificate& root, const Certificate& leaf,
                                     const PathOptions& options) {
  CPtr<X509_STORE, X509_STORE_free> store(X509_STORE_new());
  CPtr<X509_STORE_CTX, X509_STORE_CTX_free> ctx(X509_STORE_CTX_new());
  std::unique_ptr<STACK_OF(X509), X509StackFree> untrusted(sk_X509_new_null());
  if (!store || !ctx || !untrusted || X509_STORE_add_cert(store.get(), root.native()) != 1)
    throw_openssl_error("X509 store setup");
  for (const Certificate& c : options.intermediates)
    if (sk_X509_push(untrusted.get(), c.native()) == 0) throw_openssl_error("X509 chain setup");
  for (const auto& crl : options.crls)
    if (X509_STORE_add_crl(store.get(), crl.get()) != 1) throw_openssl_error("X509 store CRL");
  if (options.revocation == RevocationScope::Leaf) X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK);
  if (options.revocation == RevocationScope::WhereGiven)
    X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
  if (X509_STORE_CTX_verify_cb callback = verify_callback(options))
    X509_STORE_set_verify_cb(store.get(), callback);
  if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf.native(), untrusted.get()) != 1)
    throw_openssl_error("X509 store context");
  if (options.at_unix_time)
    X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx.get()),
                               static_cast<time_t>(*options.at_unix_time));
  const int rc = X509_verify_cert(ctx.get());
  const int err = X509_STORE_CTX_get_error(ctx.get());
  const X509* failing = X509_STORE_CTX_get_current_cert(ctx.get());
  clear_openssl_errors();
  if (rc != 1) return {false, chain_reason(err, failing != nullptr ? failing : leaf.native())};
  return {true, "ok"};
}

ChainVerdict TrustAnchor::verify(const Certificate& leaf) const {
  PathOptions options;
  if (crl_) {
    options.crls.push_back(crl_);
    options.revocation = RevocationScope::Leaf;
    options.stale_crl = stale_;
  }
  if (ChainVerdict chain = verify_certificate_path(root_, leaf, options); !chain) return chain;
  if (ChainVerdict profile = check_device_profile(leaf); !profile) return profile;
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

std::vector<std::uint8_t> TrustAnchor::crl_der() const {
  if (!crl_) return {};
  unsigned char* out = nullptr;
  const int len = i2d_X509_CRL(crl_.get(), &out);
  if (len <= 0) throw_openssl_error("revocation list DER encoding");
  std::vector<std::uint8_t> der(out, out + len);
  OPENSSL_free(out);
  return der;
}

std::string TrustAnchor::describe() const {
  return "vendor root " + root_.subject() + " (serial " + root_.serial_hex().substr(0, 16) +
         ".., EMULATED), " +
         (facts_ ? "revocation list " + facts_->describe() + ", " + std::to_string(revoked_count()) +
                       " revoked device(s)"
                 : std::string("revocation NOT checked: a revoked device is accepted"));
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
