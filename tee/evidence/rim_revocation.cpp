// Revocation of a RIM's signing chain (tee/evidence/rim.h: RimCrls): NVIDIA publishes a CRL for each CA
// of its RIM signing chain; the operator fetches them (docs/confidential-vms.md) and gives them with
// --gpu-rim-crl. OpenSSL checks the path against them (RevocationScope::WhereGiven: the issuer's
// signature on each list, the serials it revokes); this file names the certificate a list revokes and
// says, per certificate, where no list was given, so that a gap is never silent.
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <set>

#include "base/error.h"
#include "tee/evidence/crl_currency.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/rim.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

// The certificates of `chain` a list can revoke: all but copies of the trusted root (a path ends at the
// root the verifier holds, whose revocation no list of its own decides).
std::vector<const Certificate*> revocable(const std::vector<Certificate>& chain, const Certificate& root) {
  std::vector<const Certificate*> out;
  for (const Certificate& c : chain)
    if (X509_NAME_cmp(X509_get_subject_name(c.native()), X509_get_subject_name(root.native())) != 0)
      out.push_back(&c);
  return out;
}

bool issued_for(X509_crl_st* crl, const Certificate& cert) {
  return X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_issuer_name(cert.native())) == 0;
}

// The issuer of `cert` among the chain and the root, by name; null when neither holds it.
const Certificate* issuer_of(const Certificate& cert, const std::vector<Certificate>& chain,
                             const Certificate& root) {
  if (X509_check_issued(root.native(), cert.native()) == X509_V_OK) return &root;
  for (const Certificate& c : chain)
    if (X509_check_issued(c.native(), cert.native()) == X509_V_OK) return &c;
  return nullptr;
}

// The first certificate of the chain that a list signed by its issuer revokes, in words.
std::optional<std::string> revoked_signer(const std::vector<Certificate>& chain, const Certificate& root,
                                          const RimCrls& crls) {
  for (const Certificate* cert : revocable(chain, root)) {
    const Certificate* issuer = issuer_of(*cert, chain, root);
    for (std::size_t i = 0; issuer != nullptr && i < crls.crls.size(); ++i) {
      X509_crl_st* crl = crls.crls[i].get();
      X509_REVOKED* entry = nullptr;
      if (issued_for(crl, *cert) && X509_CRL_verify(crl, X509_get0_pubkey(issuer->native())) == 1 &&
          X509_CRL_get0_by_cert(crl, &entry, cert->native()) == 1)
        return "RIM signing certificate '" + cert->subject() + "' (serial " + cert->serial_hex() +
               ") is REVOKED by the revocation list '" + printable_path(crls.paths[i]) + "'";
    }
  }
  return std::nullopt;
}

void add_list_file(const std::filesystem::path& path, RimCrls& out) {
  out.paths.push_back(path.string());
  out.crls.push_back(load_crl(path, "--gpu-rim-crl"));
}

}  // namespace

std::vector<std::string> rim_crl_files(const std::vector<std::string>& files_or_dirs) {
  std::vector<std::string> out;
  for (const std::string& given : files_or_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(given, ec)) {
      out.push_back(given);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(given, ec))
      if (entry.is_regular_file()) files.push_back(entry.path().string());
    if (ec || files.empty())
      throw InputError("--gpu-rim-crl '" + printable_path(given) +
                       "': a directory without revocation lists; fetch NVIDIA's RIM CRLs "
                       "(docs/confidential-vms.md, \"RIM revocation lists\")");
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

RimCrls load_rim_crls(const std::vector<std::string>& files_or_dirs, StaleCrl stale) {
  RimCrls out{.paths = {}, .crls = {}, .stale = stale};
  for (const std::string& file : rim_crl_files(files_or_dirs)) add_list_file(file, out);
  return out;
}

ChainVerdict verify_rim_chain(const Rim& rim, const Certificate& rim_root,
                              std::optional<std::int64_t> at_unix_time, const RimCrls& crls) {
  PathOptions path = sent_chain_options(rim.signer_chain, crls.crls, at_unix_time);
  path.stale_crl = crls.stale;
  if (ChainVerdict chain = verify_certificate_path(rim_root, rim.signer_chain.front(), path); !chain) {
    if (std::optional<std::string> revoked = revoked_signer(rim.signer_chain, rim_root, crls))
      return {false, *revoked};
    return {false, "RIM signing " + chain.reason};
  }
  return {true, "ok"};
}

std::string rim_revocation_text(const std::vector<Rim>& rims, const Certificate& rim_root,
                                const RimCrls& crls, std::optional<std::int64_t> at_unix_time) {
  if (crls.crls.empty()) return "RIM signing chain's revocation NOT checked (no --gpu-rim-crl)";
  std::set<std::string> seen;
  std::string missing;
  std::size_t used = 0;
  for (const auto& crl : crls.crls) {
    bool applies = false;
    for (const Rim& rim : rims)
      for (const Certificate* cert : revocable(rim.signer_chain, rim_root))
        applies = applies || issued_for(crl.get(), *cert);
    used += applies ? 1 : 0;
  }
  for (const Rim& rim : rims)
    for (const Certificate* cert : revocable(rim.signer_chain, rim_root)) {
      const bool covered = std::any_of(crls.crls.begin(), crls.crls.end(),
                                       [&](const auto& crl) { return issued_for(crl.get(), *cert); });
      if (covered || !seen.insert(cert->subject()).second) continue;
      missing += (missing.empty() ? "" : ", ") + std::string("'") + cert->subject() +
                 "' (no --gpu-rim-crl issued by '" + cert->issuer() + "')";
    }
  std::string out = missing.empty() ? "RIM signing chain not revoked (checked against " +
                                          std::to_string(used) + " --gpu-rim-crl list(s))"
                                    : "RIM signing chain's revocation NOT checked for " + missing;
  if (crls.stale == StaleCrl::Accept)
    if (const std::string old = expired_crls_accepted(crls.paths, crls.crls, at_unix_time); !old.empty())
      out += "; " + expired_collateral_accepted(old);
  return out;
}

}  // namespace tt::tee::evidence
