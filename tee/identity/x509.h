// X.509 device identities and the emulated vendor root of trust (docs/design.md §5 "Keys").
//
// Real confidential GPUs carry an identity key fused at manufacture and a certificate the vendor
// signed for it (NVIDIA's device identity certificates); a verifier trusts a device because its
// certificate chains to the vendor's root, not because of anything the device says about itself.
// teetrain emulates that with real X.509 (OpenSSL's X509 APIs, Ed25519 keys and signatures):
//
//   vendor root     a self-signed CA certificate ("teetrain EMULATED GPU vendor root"); its private
//                   key is the vendor's secret and never needed to train (tee/identity/vendor.h writes it
//                   apart)
//   device identity an Ed25519 private key + a leaf certificate the root signed, one PEM file; the
//                   leaf must fit the device profile below (check_device_profile)
//   revocation list an X.509 CRL signed by the root, naming revoked device serial numbers; a trust
//                   anchor needs it unless its user explicitly opts out (load_without_revocation)
//
// Note [Revocation list freshness]: a genuine list is not a current one. Every list the vendor
// issues carries a cRLNumber one more than the list before it and a nextUpdate a few days out
// (vendor.h). An older list, signed by the same root, revokes less; putting it back on a host's disk
// would un-revoke a device. Two checks bound that: a list past its nextUpdate, or one without a
// number (which cannot be ordered), is refused when loaded unless the verifier accepts stale lists
// explicitly (StaleCrl::Accept, `--allow-expired-crl`, flagged in every report; a list without a
// number is then number 0); and every rank remembers the highest number it has accepted for a root
// and refuses a lower one (engine/keys/crl_state.h). A rank that never saw the newer list cannot
// tell, which is why the validity is short: a rolled-back list is refused at its nextUpdate at the
// latest, and the ranks' agreement on their inputs compares the numbers (engine/run/input_agreement.h).
//
// Everything here is public except the private keys; nothing is trusted until verify_chain says so.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/bytes.h"
#include "tee/identity/keys.h"

struct x509_st;      // OpenSSL's X509
struct X509_crl_st;  // OpenSSL's X509_CRL

namespace tt::tee {

struct X509Free {
  void operator()(x509_st* c) const noexcept;
};
struct X509CrlFree {
  void operator()(X509_crl_st* c) const noexcept;
};
using X509Ptr = std::unique_ptr<x509_st, X509Free>;
using X509CrlPtr = std::unique_ptr<X509_crl_st, X509CrlFree>;

// The vendor's device purpose: the one extended key usage a device identity certificate carries, so
// a certificate the vendor issued for anything else (a TLS server, a code signer) is never taken for
// a device. An OID under 2.25 (ITU-T X.667 / ISO/IEC 9834-8: an OID made of a random UUID, here
// a54bdd13-49b5-49e7-8105-52392f14acee, which anyone may mint without registration);
// docs/design.md §5 "Device profile".
inline constexpr const char* kDevicePurposeOid = "2.25.219716525509570296185010554610688240878";

// Certificates and CRLs larger than this are refused when parsed from the wire or a file: real ones
// are a few hundred bytes, and a bound keeps a hostile peer from making us allocate at will.
inline constexpr std::size_t kMaxCertificateBytes = 16 * 1024;

// One parsed certificate. Immutable, so copies share the parsed object.
class Certificate {
 public:
  // Parses DER; throws IntegrityError("malformed certificate: ...") on anything else (untrusted input).
  static Certificate from_der(ByteView der);
  // Reads the first PEM certificate of `path`; throws InputError naming the path.
  static Certificate load_pem(const std::filesystem::path& path);
  explicit Certificate(X509Ptr cert);

  const std::vector<std::uint8_t>& der() const { return der_; }
  std::string subject() const;  // "CN=...,O=..." (one line)
  std::string issuer() const;   // the same for the issuer's name
  std::string serial_hex() const;
  bool is_ca() const;
  // The subject's Ed25519 public key; throws IntegrityError if the key is not Ed25519.
  PublicKey ed25519_public_key() const;
  std::string describe() const;  // subject, serial, validity, issuer: for `teetrain attest`
  x509_st* native() const { return cert_.get(); }

 private:
  std::shared_ptr<x509_st> cert_;
  std::vector<std::uint8_t> der_;
};

// Every PEM certificate in `pem`, in order (a chain as a prover sends it: leaf first). Throws
// InputError("<what>: ...") when the text holds none, more than kMaxChainCertificates, or a damaged one.
inline constexpr std::size_t kMaxChainCertificates = 16;
std::vector<Certificate> certificates_from_pem(std::string_view pem, const std::string& what);

struct ChainVerdict {
  bool ok = false;
  std::string reason;  // "ok", or why the chain does not lead to the trusted root
  explicit operator bool() const { return ok; }
};

// The vendor's device profile, checked on every device certificate after its chain: X.509 v3 with
// extensions; basicConstraints CA:FALSE; keyUsage with digitalSignature (the device key signs
// evidence) and neither keyCertSign nor cRLSign; extendedKeyUsage naming exactly kDevicePurposeOid.
// "ok", or the first rule the certificate breaks, in words. Never throws on a bad certificate.
ChainVerdict check_device_profile(const Certificate& leaf);

// Whether a revocation list that cannot show it is current is used (Note [Revocation list freshness]).
enum class StaleCrl {
  Refuse,  // a list past its nextUpdate, without one, or without a CRL number is refused
  Accept,  // the explicit opt-out: such a list is used (without a number: as number 0) and reported
};

// Largest CRL number accepted: 63 bits, far above any vendor's count of lists (RFC 5280 allows 20
// octets); a larger one is refused as malformed.
inline constexpr std::uint64_t kMaxCrlNumber = 0x7fffffffffffffffULL;

// What a revocation list says about itself, as a trust anchor loaded it.
struct CrlFacts {
  std::filesystem::path path;  // the file it was loaded from, for messages
  std::uint64_t number = 0;    // its cRLNumber; 0 without one
  bool numbered = false;       // whether it carries a cRLNumber at all
  std::string next_update;     // "2026-12-06T08:50:32Z"; empty when the list has no nextUpdate
  bool expired = false;        // past its nextUpdate (or without one) when loaded
  // "number 2, next update 2026-12-06T08:50:32Z", flagged "EXPIRED" or "without a CRL number".
  std::string describe() const;
};

// The number and validity `crl` states, at this moment (no signature check: the caller decides whom
// it trusts). Throws InputError naming `path` when the cRLNumber is repeated, negative or above
// kMaxCrlNumber.
CrlFacts read_crl_facts(const X509_crl_st* crl, const std::filesystem::path& path);

// How a certificate path is checked beyond its trusted root (verify_certificate_path).
enum class RevocationScope {
  None,        // no revocation list consulted
  Leaf,        // the leaf must be covered by one of the lists (a missing list is a refusal)
  WhereGiven,  // every certificate of the path whose issuer has a list in `crls` is checked against it
};
struct PathOptions {
  std::vector<Certificate> intermediates;  // as the prover sent them: used to build the path, never trusted
  std::vector<std::shared_ptr<X509_crl_st>> crls;
  RevocationScope revocation = RevocationScope::None;
  std::optional<std::int64_t> at_unix_time;  // check validity at this time instead of now
  StaleCrl stale_crl = StaleCrl::Refuse;     // Accept: a list past its nextUpdate still revokes
};

// The options for a chain as a prover sent it, leaf first: the rest are intermediates (a copy of the
// root among them is never trusted: the path must end at the root the verifier holds), and every list
// in `crls` is checked where it applies (none given: no revocation check).
PathOptions sent_chain_options(const std::vector<Certificate>& chain,
                               std::vector<std::shared_ptr<X509_crl_st>> crls = {},
                               std::optional<std::int64_t> at_unix_time = std::nullopt);

// Verifies that `leaf` chains to `root` (signatures, validity periods, CA constraints, path length)
// through `options.intermediates`, and is not revoked as `options.revocation` says; "ok" or why not,
// in the words TrustAnchor::verify reports. Never throws on a bad certificate.
ChainVerdict verify_certificate_path(const Certificate& root, const Certificate& leaf,
                                     const PathOptions& options);

// What a verifier trusts: the vendor root certificate and its revocation list.
class TrustAnchor {
 public:
  // Loads the root certificate (PEM) and the CRL (PEM), checking that the root is a self-signed CA
  // and that the CRL is signed by it. Throws InputError naming the file on anything malformed or
  // missing, an empty `crl_pem` included (a configuration error, exit 2 at the CLI): revocation is
  // not optional, or deleting a file would switch it off. A genuine list that cannot show it is
  // current (past its nextUpdate, without one, or without a CRL number) is an IntegrityError naming
  // the list, its number and nextUpdate, unless `stale` is Accept (Note [Revocation list freshness]).
  static TrustAnchor load(const std::filesystem::path& root_pem, const std::filesystem::path& crl_pem,
                          StaleCrl stale = StaleCrl::Refuse);
  // The explicit opt-out: the root alone. Such an anchor accepts revoked devices, and says so
  // (checks_revocation() is false; describe() flags it) for every report to repeat.
  static TrustAnchor load_without_revocation(const std::filesystem::path& root_pem);
  // Where a provisioned directory keeps the CRL beside its root: "<dir>/vendor_root.crl" for
  // "<dir>/vendor_root.crt" (same stem, .crl), whether or not the file exists.
  static std::filesystem::path crl_beside(const std::filesystem::path& root_pem);

  // Checks that `leaf` was issued by the root (signature, validity period, CA constraints), is not
  // revoked (when the anchor has a CRL), fits the device profile (check_device_profile) and carries
  // an Ed25519 key. Never throws on a bad certificate.
  ChainVerdict verify(const Certificate& leaf) const;

  const Certificate& root() const { return root_; }
  bool checks_revocation() const { return crl_ != nullptr; }
  // The list's number and validity (nullopt without a list), and whether a stale one is accepted.
  const std::optional<CrlFacts>& crl_facts() const { return facts_; }
  StaleCrl stale_crl() const { return stale_; }
  std::size_t revoked_count() const;
  // The CRL as loaded, DER-encoded (empty without one): what a run digests to agree with its peers
  // on the revocation list it verified with (engine/run/input_agreement.h).
  std::vector<std::uint8_t> crl_der() const;
  // "vendor root CN=... (serial ..), revocation list number 2 with N revoked device(s), next update
  // DATE", or "..., revocation NOT checked: a revoked device is accepted" without a CRL
  std::string describe() const;

 private:
  TrustAnchor(Certificate root, X509CrlPtr crl, std::optional<CrlFacts> facts, StaleCrl stale);
  Certificate root_;
  std::shared_ptr<X509_crl_st> crl_;  // shared: an anchor is copied into each rank's config
  std::optional<CrlFacts> facts_;
  StaleCrl stale_ = StaleCrl::Refuse;
};

// A device's identity: its private key and the certificate the vendor issued for it.
struct DeviceIdentity {
  Ed25519KeyPair key;
  Certificate certificate;

  // Reads one PEM file holding the Ed25519 private key and the certificate (as `teetrain provision`
  // writes them). Throws InputError naming the path if either is missing or they do not
  // belong together (the certificate's key is not the private key's public half).
  static DeviceIdentity load_pem(const std::filesystem::path& path);
};

}  // namespace tt::tee
