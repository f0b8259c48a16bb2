#include "tee/identity/vendor.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include "tee/errors.h"
#include "tee/identity/keys.h"
#include "tee/identity/x509.h"
#include "tee/openssl_ptr.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"

namespace tt::tee {
namespace fs = std::filesystem;

namespace {

constexpr const char* kOrg = "teetrain EMULATED GPU vendor";

using BioPtr = CPtr<BIO, BIO_free_all>;
using Asn1IntPtr = CPtr<ASN1_INTEGER, ASN1_INTEGER_free>;

fs::path root_key_path(const fs::path& dir) {
  return dir / "vendor_secret" / "root.key";
}
fs::path crl_path(const fs::path& dir) {
  return dir / "vendor_root.crl";
}
// The vendor's own copy of the list: deleting the public one and provisioning again must not forget
// a revocation (verifiers refuse to run without the list; provision then rewrites it from here).
fs::path crl_record_path(const fs::path& dir) {
  return dir / "vendor_secret" / "revoked.crl";
}

void write_file(const fs::path& path, const std::string& text, mode_t mode) {
  write_file_atomic(path, bytes_of(std::string_view(text)), mode, "provision: file");
}

std::string pem_of(int (*write)(BIO*, const void*), const void* object, const char* what) {
  BioPtr mem(BIO_new(BIO_s_secmem()));
  if (!mem || write(mem.get(), object) != 1) throw_openssl_error(std::string("PEM encoding of ") + what);
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}
int write_key(BIO* b, const void* k) {
  return PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(const_cast<void*>(k)), nullptr, nullptr, 0,
                                  nullptr, nullptr);
}
int write_cert(BIO* b, const void* c) {
  return PEM_write_bio_X509(b, static_cast<X509*>(const_cast<void*>(c)));
}
int write_crl(BIO* b, const void* c) {
  return PEM_write_bio_X509_CRL(b, static_cast<X509_CRL*>(const_cast<void*>(c)));
}

// A random positive 127-bit serial: unique without a registry, as RFC 5280 §4.1.2.2 allows.
Asn1IntPtr random_serial() {
  auto raw = random_array<16>();
  raw[0] &= 0x7f;
  raw[0] |= 0x01;  // never a short (leading-zero) encoding
  std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(BN_bin2bn(raw.data(), static_cast<int>(raw.size()), nullptr),
                                                 BN_free);
  Asn1IntPtr serial(bn ? BN_to_ASN1_INTEGER(bn.get(), nullptr) : nullptr);
  if (!serial) throw_openssl_error("certificate serial");
  return serial;
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) {
    X509_EXTENSION_free(ext);
    throw_openssl_error("certificate extension");
  }
  X509_EXTENSION_free(ext);
}

// A certificate for `subject_key` named `cn`, signed by `issuer_key` (self-signed when issuer is null).
X509Ptr make_certificate(const Ed25519KeyPair& subject_key, const std::string& cn, X509* issuer,
                         const Ed25519KeyPair& issuer_key, bool ca, int valid_days) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) throw_openssl_error("X509_new");
  const Asn1IntPtr serial = random_serial();
  X509_set_serialNumber(cert.get(), serial.get());
  // Back-dated an hour: hosts whose clocks differ a little still accept a fresh certificate.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(valid_days) * 86400L);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(kOrg), -1, -1,
                             0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  if (X509_set_pubkey(cert.get(), subject_key.native()) != 1) throw_openssl_error("X509_set_pubkey");
  X509* signer = issuer != nullptr ? issuer : cert.get();
  add_ext(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add_ext(cert.get(), signer, NID_key_usage,
          ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  // The device profile (tee/identity/x509.h check_device_profile): a device key signs evidence, for the
  // vendor's device purpose only.
  if (!ca)
    add_ext(cert.get(), signer, NID_ext_key_usage, (std::string("critical,") + kDevicePurposeOid).c_str());
  add_ext(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer != nullptr) add_ext(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  // Ed25519 signs the whole message itself: no digest is named (md = null).
  if (X509_sign(cert.get(), issuer_key.native(), nullptr) <= 0) throw_openssl_error("X509_sign");
  return cert;
}

struct Vendor {
  Ed25519KeyPair key;
  Certificate root;
};

Vendor load_or_create_root(const ProvisionOptions& o, ProvisionReport& report) {
  const fs::path cert_file = vendor_root_path(o.dir);
  const fs::path key_file = root_key_path(o.dir);
  std::error_code ec;
  const bool have_cert = fs::exists(cert_file, ec);
  const bool have_key = fs::exists(key_file, ec);
  if (have_cert != have_key) {
    throw InputError("provision: '" + o.dir.string() + "' holds " +
                     (have_cert ? "a root certificate without its key (" + key_file.string() + ")"
                                : "a root key without its certificate (" + cert_file.string() + ")") +
                     "; use a new directory");
  }
  if (have_cert) {
    Vendor v{Ed25519KeyPair::load_pem(key_file), Certificate::load_pem(cert_file)};
    if (!equal_ct(v.root.ed25519_public_key(), v.key.public_key()))
      throw InputError("provision: '" + key_file.string() + "' is not the key of '" + cert_file.string() +
                       "'");
    return v;
  }
  fs::create_directories(key_file.parent_path());
  fs::permissions(key_file.parent_path(), fs::perms::owner_all, fs::perm_options::replace);
  Ed25519KeyPair key = Ed25519KeyPair::generate();
  X509Ptr cert = make_certificate(key, "teetrain EMULATED GPU vendor root", nullptr, key, true, o.valid_days);
  write_file(key_file, pem_of(write_key, key.native(), "root key"), 0600);
  write_file(cert_file, pem_of(write_cert, cert.get(), "root certificate"), 0644);
  report.created_root = true;
  return Vendor{std::move(key), Certificate(std::move(cert))};
}

void issue_device(const Vendor& v, const ProvisionOptions& o, int index) {
  const Ed25519KeyPair key = Ed25519KeyPair::generate();
  const X509Ptr cert = make_certificate(key, "teetrain EMULATED GPU device " + std::to_string(index),
                                        v.root.native(), v.key, false, o.valid_days);
  write_file(
      device_identity_path(o.dir, index),
      pem_of(write_key, key.native(), "device key") + pem_of(write_cert, cert.get(), "device certificate"),
      0600);
}

// What the vendor's lists in DIR hold together, so that a new list adds to them instead of replacing
// them: every revoked serial (hex), the highest number issued so far, and the public list's facts.
struct IssuedLists {
  std::set<std::string> serials;
  std::uint64_t last_number = 0;
  std::optional<CrlFacts> published;  // DIR/vendor_root.crl's, when there is one
};

// Adds the CRL at `path`, if there is one, to `lists`; returns its facts.
std::optional<CrlFacts> read_list(const fs::path& path, IssuedLists& lists) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::vector<std::uint8_t> pem = read_regular_file(path, "revocation list", kMaxPemFileBytes);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<X509_CRL, decltype(&X509_CRL_free)> crl(
      bio ? PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr) : nullptr, X509_CRL_free);
  if (!crl) {
    clear_openssl_errors();
    throw InputError("provision: '" + path.string() + "' is not a PEM revocation list");
  }
  const STACK_OF(X509_REVOKED)* list = X509_CRL_get_REVOKED(crl.get());
  for (int i = 0; list != nullptr && i < sk_X509_REVOKED_num(list); ++i) {
    const ASN1_INTEGER* s = X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(list, i));
    lists.serials.insert(
        to_hex(ByteView(ASN1_STRING_get0_data(s), static_cast<std::size_t>(ASN1_STRING_length(s)))));
  }
  CrlFacts facts = read_crl_facts(crl.get(), path);
  lists.last_number = std::max(lists.last_number, facts.number);
  return facts;
}

IssuedLists issued_lists(const fs::path& dir) {
  IssuedLists lists;
  lists.published = read_list(crl_path(dir), lists);
  read_list(crl_record_path(dir), lists);
  return lists;
}

// Signs the next list (Note [Revocation list freshness], x509.h): number `number`, current from an
// hour ago (hosts whose clocks differ a little accept a fresh list) until `crl_days` from now.
CrlFacts write_crl_file(const Vendor& v, const ProvisionOptions& o, const std::set<std::string>& serials,
                        std::uint64_t number) {
  std::unique_ptr<X509_CRL, decltype(&X509_CRL_free)> crl(X509_CRL_new(), X509_CRL_free);
  CPtr<ASN1_TIME, ASN1_TIME_free> now(X509_gmtime_adj(nullptr, -3600));
  CPtr<ASN1_TIME, ASN1_TIME_free> next(X509_gmtime_adj(nullptr, static_cast<long>(o.crl_days) * 86400L));
  Asn1IntPtr crl_number(ASN1_INTEGER_new());
  if (!crl || !now || !next || !crl_number || ASN1_INTEGER_set_uint64(crl_number.get(), number) != 1 ||
      X509_CRL_set_version(crl.get(), 1) != 1 ||
      X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(v.root.native())) != 1 ||
      X509_CRL_set1_lastUpdate(crl.get(), now.get()) != 1 ||
      X509_CRL_set1_nextUpdate(crl.get(), next.get()) != 1 ||
      X509_CRL_add1_ext_i2d(crl.get(), NID_crl_number, crl_number.get(), 0, 0) != 1)
    throw_openssl_error("CRL setup");
  for (const std::string& hex : serials) {
    const std::vector<std::uint8_t> raw = from_hex(hex);
    std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(
        BN_bin2bn(raw.data(), static_cast<int>(raw.size()), nullptr), BN_free);
    Asn1IntPtr serial(bn ? BN_to_ASN1_INTEGER(bn.get(), nullptr) : nullptr);
    X509_REVOKED* r = X509_REVOKED_new();
    if (!serial || r == nullptr || X509_REVOKED_set_serialNumber(r, serial.get()) != 1 ||
        X509_REVOKED_set_revocationDate(r, now.get()) != 1 || X509_CRL_add0_revoked(crl.get(), r) != 1) {
      X509_REVOKED_free(r);
      throw_openssl_error("CRL entry");
    }
  }
  X509_CRL_sort(crl.get());
  if (X509_CRL_sign(crl.get(), v.key.native(), nullptr) <= 0) throw_openssl_error("X509_CRL_sign");
  const std::string pem = pem_of(write_crl, crl.get(), "revocation list");
  write_file(crl_record_path(o.dir), pem, 0600);
  write_file(crl_path(o.dir), pem, 0644);
  return read_crl_facts(crl.get(), crl_path(o.dir));
}

// A device issued by an older provision, before the device profile (tee/identity/x509.h), would be refused by
// every verifier: its key is certified again in the profile, under a new serial that inherits a
// revocation. Devices this root did not issue are left alone. Returns whether the list grew.
bool reissue_outside_profile(const Vendor& v, const ProvisionOptions& o, std::set<std::string>& serials,
                             ProvisionReport& report) {
  bool list_grew = false;
  for (int i = 0; i < report.devices; ++i) {
    const fs::path path = device_identity_path(o.dir, i);
    const Certificate old = Certificate::load_pem(path);
    if (check_device_profile(old).ok || X509_check_issued(v.root.native(), old.native()) != X509_V_OK)
      continue;
    const Ed25519KeyPair key = Ed25519KeyPair::load_pem(path);
    const X509Ptr cert = make_certificate(key, "teetrain EMULATED GPU device " + std::to_string(i),
                                          v.root.native(), v.key, false, o.valid_days);
    if (serials.count(old.serial_hex()) != 0) {
      serials.insert(Certificate(X509Ptr(X509_dup(cert.get()))).serial_hex());
      list_grew = true;
    }
    write_file(
        path,
        pem_of(write_key, key.native(), "device key") + pem_of(write_cert, cert.get(), "device certificate"),
        0600);
    report.reissued.push_back(i);
  }
  return list_grew;
}

int count_devices(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  while (fs::exists(device_identity_path(dir, n), ec)) ++n;
  return n;
}

}  // namespace

fs::path vendor_root_path(const fs::path& dir) {
  return dir / "vendor_root.crt";
}

fs::path device_identity_path(const fs::path& dir, int i) {
  return dir / ("device_" + std::to_string(i) + ".pem");
}

namespace {

// Whether this call issues the next list: the revocations changed, a copy is missing, the public list
// is stale (a verifier would refuse it) or older than the vendor's record (an older list put back), or
// the vendor renews it before its nextUpdate.
bool needs_new_list(const ProvisionOptions& o, const ProvisionReport& report, const IssuedLists& lists,
                    bool list_grew) {
  std::error_code ec;
  const bool stale = !lists.published || !lists.published->numbered || lists.published->expired ||
                     lists.published->number < lists.last_number;
  return o.renew_crl || report.created_root || !report.revoked.empty() || list_grew || stale ||
         !fs::exists(crl_record_path(o.dir), ec);
}

// What a user reads: every file and what it is for.
std::string report_text(const ProvisionOptions& o, const ProvisionReport& report) {
  const std::string crl_status = report.issued_crl
                                     ? "issued now, valid " + std::to_string(o.crl_days) + " day(s)"
                                     : std::string("unchanged");
  return "EMULATED vendor root of trust in " + o.dir.string() + (report.created_root ? " (new)" : "") +
         "\n  " + vendor_root_path(o.dir).string() +
         "   root certificate: give it to verifiers (--trust-root)" + "\n  " + crl_path(o.dir).string() +
         "   revocation list (" + std::to_string(report.revoked_total) + " revoked), read beside the root" +
         "\n    list " + report.crl.describe() + ": " + crl_status +
         " (verifiers refuse it after its next update; --renew-crl issues the next)" + "\n  " +
         root_key_path(o.dir).string() + "   the vendor's secret root key: keep it away from training hosts" +
         "\n  " +
         (report.devices == 0 ? std::string("no device identities yet (--devices N issues them)")
                              : (o.dir / "device_{0..").string() + std::to_string(report.devices - 1) +
                                    "}.pem   device identities (key + certificate), " +
                                    std::to_string(report.issued.size()) + " issued now: one per rank " +
                                    "(--device-identity " + (o.dir / "device_{rank}.pem").string() + ")") +
         "\n" +
         (report.reissued.empty()
              ? std::string()
              : "  " + std::to_string(report.reissued.size()) +
                    " older device certificate(s) issued again in the device profile (same keys)\n");
}

}  // namespace

ProvisionReport provision(const ProvisionOptions& o) {
  if (o.devices < 0 || o.valid_days < 1) throw InputError("provision: --devices must be >= 0");
  if (o.crl_days < 1 || o.crl_days > kMaxCrlDays)
    throw InputError("provision: --crl-days must be from 1 to " + std::to_string(kMaxCrlDays));
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) throw InputError("provision: cannot create '" + o.dir.string() + "' (" + ec.message() + ")");
  ProvisionReport report;
  const Vendor v = load_or_create_root(o, report);
  for (int i = 0; i < o.devices; ++i) {
    if (fs::exists(device_identity_path(o.dir, i), ec)) continue;
    issue_device(v, o, i);
    report.issued.push_back(i);
  }
  report.devices = count_devices(o.dir);
  IssuedLists lists = issued_lists(o.dir);
  const bool list_grew = reissue_outside_profile(v, o, lists.serials, report);
  for (int i : o.revoke) {
    if (i < 0 || !fs::exists(device_identity_path(o.dir, i), ec))
      throw InputError("provision: --revoke " + std::to_string(i) + ": no such device in '" + o.dir.string() +
                       "'");
    if (lists.serials.insert(Certificate::load_pem(device_identity_path(o.dir, i)).serial_hex()).second)
      report.revoked.push_back(i);
  }
  report.issued_crl = needs_new_list(o, report, lists, list_grew);
  if (report.issued_crl && lists.last_number >= kMaxCrlNumber)
    throw InputError("provision: '" + o.dir.string() + "' has issued its last revocation list number");
  report.crl =
      report.issued_crl ? write_crl_file(v, o, lists.serials, lists.last_number + 1) : *lists.published;
  report.revoked_total = lists.serials.size();
  report.text = report_text(o, report);
  return report;
}

}  // namespace tt::tee
