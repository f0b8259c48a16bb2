// The emulated GPU vendor: `teetrain provision` (docs/design.md §5 "Keys").
//
// A real vendor fuses an identity key into each GPU at manufacture and signs a certificate for it
// with a root key kept in its own vault. provision() plays that role in a directory:
//
//   DIR/vendor_root.crt            root CA certificate: what verifiers trust (--trust-root)
//   DIR/vendor_root.crl            revocation list signed by the root (verifiers need it beside the root):
//                                  each list the vendor issues carries a cRLNumber one more than the
//                                  list before it and a nextUpdate `crl_days` out (Note [Revocation
//                                  list freshness], x509.h)
//   DIR/device_<i>.pem             device i: Ed25519 private key + its certificate (mode 0600), in the
//                                  device profile (tee/identity/x509.h check_device_profile)
//   DIR/vendor_secret/root.key     the vendor's private root key (mode 0600, directory 0700): the
//                                  one secret that can mint identities; a training run never reads it
//   DIR/vendor_secret/revoked.crl  the vendor's record of the list, so that provisioning again
//                                  rewrites a deleted DIR/vendor_root.crl with every revocation in it
//
// Running provision again on the same DIR keeps the root and every existing device key, issues the
// devices that are missing, adds revocations, and certifies again (same key, new serial, revocation
// kept) a device whose certificate an older provision issued outside the device profile. It issues the
// next list when the revocations change, when either copy of the list is missing, when the public list
// is stale (expired, from an older provision without a number, or older than the vendor's record) and
// when asked (`renew_crl`: the vendor's periodic re-issue before the nextUpdate); otherwise the list
// stays as it is. Everything is EMULATED and labelled so in the certificates' subject names; the
// formats are real (PEM, X.509 v3, CRL v2 with cRLNumber), readable by `openssl x509 -text` and
// `openssl crl -text`.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "tee/identity/x509.h"

namespace tt::tee {

// A revocation list is current for a week by default: long enough to reach every host, short enough
// that an older list put back on a disk is refused within days (Note [Revocation list freshness]).
inline constexpr int kDefaultCrlDays = 7;
inline constexpr int kMaxCrlDays = 3650;

struct ProvisionOptions {
  std::filesystem::path dir;
  int devices = 0;                 // devices 0 .. devices-1 exist afterwards (missing ones are issued)
  std::vector<int> revoke;         // device indices to add to the revocation list (must exist)
  int valid_days = 3650;           // certificates
  int crl_days = kDefaultCrlDays;  // a new revocation list's nextUpdate, from now (1 .. kMaxCrlDays)
  bool renew_crl = false;          // issue the next list even when nothing else asks for one
};

struct ProvisionReport {
  bool created_root = false;
  std::vector<int> issued;    // device indices issued by this call
  std::vector<int> revoked;   // device indices newly revoked by this call
  std::vector<int> reissued;  // devices from an older provision, certified again in the device profile
  int devices = 0;            // device files present afterwards
  std::size_t revoked_total = 0;
  bool issued_crl = false;  // whether this call issued a new list
  CrlFacts crl;             // the public list afterwards: its number and nextUpdate
  std::string text;         // what a user reads: every file and what it is for
};

std::filesystem::path vendor_root_path(const std::filesystem::path& dir);             // DIR/vendor_root.crt
std::filesystem::path device_identity_path(const std::filesystem::path& dir, int i);  // DIR/device_<i>.pem

// Throws InputError on bad options (negative counts, revoking a device that does not
// exist, a damaged vendor directory, a path that cannot be created) and RunError naming the file
// when writing fails.
ProvisionReport provision(const ProvisionOptions& options);

}  // namespace tt::tee
