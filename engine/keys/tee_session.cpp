#include "engine/keys/tee_session.h"

#include <filesystem>

#include "base/error.h"
#include "engine/keys/crl_state.h"
#include "tee/identity/traffic_keys.h"

namespace tt {

namespace {

constexpr const char* kNoTrustWarning = "no attestation: an on-path adversary can read everything";
constexpr const char* kNoRevocationWarning =
    "revocation NOT checked: a revoked device is accepted (--no-revocation-check)";

// A stale list accepted under --allow-expired-crl (Note [Revocation list freshness]): empty otherwise.
std::string stale_list_warning(const std::optional<tee::CrlFacts>& list) {
  if (!list || (list->numbered && !list->expired)) return "";
  return "revocation list " + list->describe() +
         " accepted: a device revoked after it may be accepted (--allow-expired-crl)";
}

std::string provision_hint(int world) {
  return "run `teetrain provision --out vendor --devices " + std::to_string(world) +
         "` once, then pass --trust-root vendor/vendor_root.crt --device-identity vendor/device_{rank}.pem";
}

// A rank without an identity file: with a {rank} pattern, typically a job with more ranks than the
// vendor provisioned devices; `provision` on the same folder keeps the root and adds the missing ones.
std::string missing_identity(const std::string& pattern, const std::string& path, int rank, int world) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string provision = "`teetrain provision --out " +
                                (dir.empty() ? std::string(".") : dir.string()) + " --devices " +
                                std::to_string(world) + "`";
  if (pattern.find("{rank}") == std::string::npos)
    return "--device-identity " + path + ": no such file; pass an identity that exists (" + provision +
           " writes device_0.pem .. device_" + std::to_string(world - 1) + ".pem)";
  return "--device-identity " + path + ": rank " + std::to_string(rank) + " of " + std::to_string(world) +
         " has no device identity; give every rank one: " + provision +
         " (it keeps the vendor root and adds the missing devices)";
}

}  // namespace

std::string expand_rank(const std::string& pattern, int rank) {
  static constexpr std::string_view kToken = "{rank}";
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = pattern.find(kToken); at != std::string::npos; at = pattern.find(kToken, from)) {
    out.append(pattern, from, at - from).append(std::to_string(rank));
    from = at + kToken.size();
  }
  return out.append(pattern, from);
}

std::filesystem::path crl_state_path(const TrustOptions& trust, int rank) {
  if (!trust.crl_state.empty()) return expand_rank(trust.crl_state, rank);
  if (!trust.device_identity.empty()) return crl_state_beside(expand_rank(trust.device_identity, rank));
  return {};
}

std::shared_ptr<const tee::TrustAnchor> load_trust(const TrustOptions& trust, int rank) {
  if (trust.trust_root.empty()) return nullptr;
  if (trust.no_revocation_check && (trust.allow_expired_crl || !trust.crl_state.empty()))
    throw InputError(
        "--allow-expired-crl and --crl-state concern the revocation list, which --no-revocation-check "
        "drops; give one or the other");
  auto anchor = comm::load_trust_anchor(
      trust.trust_root,
      trust.no_revocation_check ? comm::RevocationCheck::OptedOut : comm::RevocationCheck::Required,
      trust.allow_expired_crl ? tee::StaleCrl::Accept : tee::StaleCrl::Refuse);
  const std::filesystem::path state = crl_state_path(trust, rank);
  if (!state.empty()) remember_crl(state, *anchor, rank);
  return anchor;
}

comm::AttestConfig make_attest_config(const TrustOptions& trust, int rank, int world,
                                      std::string run_config) {
  comm::AttestConfig config;
  config.mode = trust.mode;
  config.run_config = std::move(run_config);
  const bool any_trust_flag = !trust.trust_root.empty() || !trust.device_identity.empty() ||
                              trust.no_revocation_check || trust.allow_expired_crl ||
                              !trust.crl_state.empty();
  const RealAttestationOptions& r = trust.real;
  const bool any_real_flag = !r.tsm_dir.empty() || !r.vcek.empty() || !r.policy.empty() || !r.crls.empty() ||
                             !r.test_roots.empty() || r.allow_test_roots || !r.qe_identity.empty() ||
                             !r.tcb_info.empty() || !r.collateral_chain.empty() ||
                             r.allow_expired_collateral || !r.gpu_rims.empty() || !r.gpu_rim_crls.empty();
  if (trust.mode != comm::AttestationMode::Real && any_real_flag)
    throw InputError(
        "--tsm-dir, --vcek, --attestation-policy, --evidence-crl, --qe-identity, --tcb-info, "
        "--collateral-chain, --allow-expired-collateral, --gpu-rims, --gpu-rim-crl, --test-roots and "
        "--allow-test-roots are "
        "for real evidence: add --attestation tdx|snp|tdx+gpu|snp+gpu, or drop them");
  if (trust.mode == comm::AttestationMode::Real) {
    if (!r.gpu_rims.empty() && !trust.real_kind.gpu)
      throw InputError(std::string("--gpu-rims holds GPU measurements; --attestation ") +
                       trust.real_kind.name + " gathers no GPU evidence: add +gpu, or drop --gpu-rims");
    if (!r.gpu_rim_crls.empty() && r.gpu_rims.empty())
      throw InputError(
          "--gpu-rim-crl revokes RIM signing certificates: give the RIMs it is for with --gpu-rims");
    if (any_trust_flag || !trust.policy.empty())
      throw InputError(std::string("--attestation ") + trust.real_kind.name +
                       " verifies the hardware's own evidence against its vendors' roots; drop --trust-root/"
                       "--device-identity/--no-revocation-check/--allow-expired-crl/--crl-state/--policy "
                       "(they are for the emulated vendor)");
    config.real = make_real_attestation(trust.real_kind, trust.real, rank);
    return config;
  }
  if (trust.mode == comm::AttestationMode::None) {
    if (any_trust_flag)
      throw InputError(
          "--attestation none runs without a root of trust; drop --trust-root/--device-identity/"
          "--no-revocation-check/--allow-expired-crl/--crl-state, or drop --attestation none to use them");
  } else if (trust.trust_root.empty() != trust.device_identity.empty()) {
    throw InputError(trust.trust_root.empty()
                         ? "--device-identity needs --trust-root (the vendor root that certified it)"
                         : "--trust-root needs --device-identity (this rank's certified key: " +
                               provision_hint(world) + ")");
  } else if (trust.trust_root.empty() && world > 1) {
    throw InputError("TEE mode with " + std::to_string(world) +
                     " ranks needs a root of trust, or attestation proves nothing: " + provision_hint(world) +
                     " (or --attestation none, flagged in every report: " + kNoTrustWarning + ")");
  }
  if (!trust.trust_root.empty()) {
    // The identity's file first: the CRL state lies beside it by default.
    const std::string identity = expand_rank(trust.device_identity, rank);
    if (!std::filesystem::exists(identity))
      throw InputError(missing_identity(trust.device_identity, identity, rank, world));
    config.anchor = load_trust(trust, rank);
    config.identity = comm::load_identity(identity);
  }
  if (!trust.policy.empty()) config.policy = comm::load_policy(trust.policy);
  return config;
}

AttestationSummary attestation_summary(const comm::AttestConfig& config, int world) {
  const bool revocation = config.anchor != nullptr && config.anchor->checks_revocation();
  const std::optional<tee::CrlFacts> list =
      config.anchor != nullptr ? config.anchor->crl_facts() : std::optional<tee::CrlFacts>();
  const std::string revocation_warning =
      config.anchor != nullptr && !revocation ? kNoRevocationWarning : stale_list_warning(list);
  if (world == 1) return {"single rank", config.anchor != nullptr, revocation, list, revocation_warning, ""};
  if (config.mode == comm::AttestationMode::None)
    return {"none", false, false, std::nullopt, kNoTrustWarning, ""};
  if (config.real)
    return {config.real->kind.name, true, false, std::nullopt, "", config.real->verifier->describe()};
  return {"certified", true, revocation, list, revocation_warning, ""};
}

std::string attestation_banner(const comm::AttestConfig& config, int world) {
  const AttestationSummary s = attestation_summary(config, world);
  if (!s.authenticated && !s.warning.empty()) return "WARNING: " + s.warning + " (--attestation none)";
  const std::string warning = s.warning.empty() ? "" : "WARNING: " + s.warning + "; ";
  if (world == 1) return warning + "single rank: no peer to attest";
  if (config.real)
    return std::string("real evidence: ") + comm::cpu_tee_name(config.real->kind.cpu) +
           (config.real->kind.gpu ? " and NVIDIA GPUs" : "") + ", each bound to its rank's key (" +
           s.evidence + ")";
  const std::string policy = config.policy.binaries.empty() && config.policy.configs.empty()
                                 ? "policy: the verifier's own binary and configuration"
                                 : "policy: " + std::to_string(config.policy.binaries.size()) +
                                       " binary and " + std::to_string(config.policy.configs.size()) +
                                       " configuration reference(s)";
  return warning + "certified by " + config.anchor->describe() + "; this rank " +
         config.identity->certificate.subject() + "; " + policy;
}

TeeSession::TeeSession(comm::Transport& transport, const comm::AttestConfig& config,
                       const TeeChannelOptions& c, Profiler* profiler)
    : keys_(comm::establish_keys(transport, config)),
      notice_key_(tee::derive_notice_key(keys_->group)),
      verified_peers_(keys_->verified_peers) {
  comm::SealedChannelOptions so;
  so.cipher = c.cipher;
  so.rekey = tee::RekeyPolicy::from_megabytes(c.rekey_mb);
  so.crypto_threads = c.crypto_threads;
  channel_ = comm::make_sealed_channel(*keys_, so, profiler);  // fills rank, world size and run id
}

comm::SessionKeys& TeeSession::keys() {
  if (!keys_) throw RunError("TEE session: the session secrets were wiped at the end of setup");
  return *keys_;
}

}  // namespace tt
