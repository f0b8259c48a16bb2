// The test vendor's PKI (test_vendor.h): keys, certificates and CRLs made with OpenSSL, and raw
// ECDSA signatures (r || s, big-endian) as the hardware's evidence carries them.
#pragma once
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tee/bytes.h"
#include "tee/openssl_ptr.h"
#include "tests/support/test_vendor/test_vendor.h"

namespace tt::tee::evidence::test_vendor {

using Key = CPtr<EVP_PKEY, EVP_PKEY_free>;
using Cert = CPtr<X509, X509_free>;

inline constexpr long kRevokedSerial = 0xDEAD;  // what every CRL of make_roots revokes

enum class KeyKind { P256, P384, Rsa };
// How a CA signs: ECDSA with the curve's hash, or RSA-PSS over SHA-384 (salt 48) as AMD's ARK and ASK.
enum class SignStyle { Ecdsa, RsaPss };

Key generate_key(KeyKind kind);

struct CertSpec {
  std::string common_name;  // "teetrain TEST ... - not a vendor"
  long serial = 1;
  long not_before_s = -3600;  // from now
  long not_after_s = 315360000;
  bool ca = false;
  SignStyle style = SignStyle::Ecdsa;
};
// A certificate for `subject_key`, signed by `issuer_key` under `issuer` (null: self-signed).
Cert make_cert(const CertSpec& spec, EVP_PKEY* subject_key, const X509* issuer, EVP_PKEY* issuer_key);
// Appends a non-critical extension `oid` whose contents are `der` (the value's DER encoding).
void add_raw_extension(X509* cert, const char* oid, ByteView der);
// Signs `cert` again after extensions were added.
void sign_cert(X509* cert, EVP_PKEY* issuer_key, SignStyle style);

// What a CRL revokes and when it was issued and goes stale, in seconds from now.
struct CrlSpec {
  std::vector<long> revoked = {kRevokedSerial};
  long last_update_s = -3600;
  long next_update_s = 30L * 86400L;
};
// A CRL of `issuer` as `spec` says (by default revoking kRevokedSerial, current for 30 days).
void write_crl(const std::filesystem::path& out, const X509* issuer, EVP_PKEY* issuer_key,
               const CrlSpec& spec = {});

void write_key(const std::filesystem::path& path, EVP_PKEY* key);
Key read_key(const std::filesystem::path& path);
void write_cert(const std::filesystem::path& path, const X509* cert);
Cert read_cert(const std::filesystem::path& path);
std::string pem_of(const X509* cert);

// ECDSA over the curve's hash (SHA-256 for P-256, SHA-384 for P-384), as r || s of `scalar_bytes` each.
std::vector<std::uint8_t> sign_raw(EVP_PKEY* key, ByteView data, std::size_t scalar_bytes);
// The P-256 public key as x || y (64 bytes), as a TDX quote carries its attestation key.
std::vector<std::uint8_t> p256_xy(EVP_PKEY* key);

// The leaf certificate's serial and validity for a variant (revoked: kRevokedSerial; expired: past).
CertSpec leaf_spec(const std::string& common_name, Variant variant);

}  // namespace tt::tee::evidence::test_vendor

namespace tt::tee::evidence::test_vendor {

// One certificate authority of a test root directory: its certificate's file (the roots' names are
// tee/evidence/bundled_roots.h's), its key's, its parent (empty: a root), and how it signs.
struct Authority {
  const char* cert;
  const char* key;
  const char* parent;
  const char* common_name;
  KeyKind kind;
  SignStyle style;  // how its own certificate is signed (by the parent, or itself)
};
// Roots before the intermediates they sign.
extern const std::array<Authority, 9> kAuthorities;
inline constexpr const char* kIntelPckCa = "intel_pck_ca.pem";
inline constexpr const char* kNvidiaDeviceCa = "nvidia_device_ca.pem";
inline constexpr const char* kIntelTcbSigning = "intel_tcb_signing.pem";

// An authority's certificate and key, read from `dir`.
struct Signer {
  Cert cert;
  Key key;
};
Signer load_signer(const std::filesystem::path& dir, const char* cert_file);

}  // namespace tt::tee::evidence::test_vendor

namespace tt::tee::evidence::test_vendor {

// Writes into a message being assembled: little-endian numbers, bytes. Out of line: GCC 12 inlines a
// vector's growth into these and warns falsely about the sizes it then sees.
void set_le(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t value, std::size_t bytes);
void put_le(std::vector<std::uint8_t>& out, std::uint64_t value, std::size_t bytes);
void put_bytes(std::vector<std::uint8_t>& out, ByteView bytes);
void set_bytes(std::vector<std::uint8_t>& out, std::size_t at, ByteView bytes);

}  // namespace tt::tee::evidence::test_vendor
