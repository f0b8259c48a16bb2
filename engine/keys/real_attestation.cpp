#include "engine/keys/real_attestation.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/hex.h"
#include "engine/keys/tee_session.h"
#include "tee/bytes.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/crl_currency.h"
#include "tee/evidence/evidence_policy.h"
#include "tee/evidence/gather.h"
#include "tee/evidence/intel_collateral.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/rim.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tsm_report.h"
#include "tee/identity/kx_binding.h"
#include "tee/regular_file.h"

namespace tt {

namespace ev = tee::evidence;

namespace {

comm::RealVerdict refuse(std::string reason) {
  return {.ok = false, .reason = std::move(reason), .measurements = ""};
}

std::string key_substituted(const char* field) {
  return std::string("key substituted: the evidence's ") + field +
         " is not kx_challenge(our nonce, rank, the key received beside it): the key was replaced, or "
         "the evidence answers another challenge";
}

std::vector<tee::Certificate> vcek_chain(const std::vector<std::uint8_t>& bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.find("-----BEGIN") != std::string_view::npos)
    return tee::certificates_from_pem(text, "the VCEK sent with the report");
  return {tee::Certificate::from_der(bytes)};
}

// --gpu-rims DIR: every regular file in it, sorted; none without the flag. InputError when DIR is not a
// directory of files.
std::vector<std::string> rim_files(const std::string& dir) {
  std::vector<std::string> files;
  if (dir.empty()) return files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  if (ec || files.empty())
    throw InputError("--gpu-rims '" + dir +
                     "': not a directory of RIM files; fetch the driver's and the VBIOS's RIMs from "
                     "NVIDIA's RIM service (docs/confidential-vms.md)");
  std::sort(files.begin(), files.end());
  return files;
}

// Note [Collateral in the agreed inputs]: ranks that verify their peers with different collateral (another
// TCB info, QE identity, issuer chain, revocation list or RIM) would each admit what another refuses, and
// none would know. So every file a verifier judges evidence with is a row here, and each file's SHA-256
// joins the ranks' agreed inputs (engine/run/input_agreement.h: InputKind::Collateral, in round one,
// before any key is released): a rank whose collateral differs stops every rank, naming the kind of file.
// The bytes are compared, not the paths (each rank may keep its copy elsewhere). A new kind of collateral
// is one more row; `numbered` rows take a list and name each file by its place in it ("evidence CRL 2").
struct CollateralSource {
  const char* kind;
  bool numbered;
  std::vector<std::string> (*files)(const RealAttestationOptions& o);
};
std::vector<std::string> one(const std::string& path) {
  return path.empty() ? std::vector<std::string>{} : std::vector<std::string>{path};
}
constexpr CollateralSource kCollateralSources[] = {
    {"QE identity", false, [](const RealAttestationOptions& o) { return one(o.qe_identity); }},
    {"TCB info", false, [](const RealAttestationOptions& o) { return one(o.tcb_info); }},
    {"collateral chain", false, [](const RealAttestationOptions& o) { return one(o.collateral_chain); }},
    {"evidence CRL", true, [](const RealAttestationOptions& o) { return o.crls; }},
    {"GPU RIM", true, [](const RealAttestationOptions& o) { return rim_files(o.gpu_rims); }},
    {"GPU RIM CRL", true, [](const RealAttestationOptions& o) { return ev::rim_crl_files(o.gpu_rim_crls); }},
};
// Collateral files are a few KiB to a few MiB (NVIDIA's revocation lists are the largest).
constexpr std::uint64_t kMaxCollateralFileBytes = std::uint64_t{64} << 20;

std::vector<comm::CollateralDigest> collateral_digests(const RealAttestationOptions& o) {
  std::vector<comm::CollateralDigest> out;
  for (const CollateralSource& source : kCollateralSources) {
    const std::vector<std::string> files = source.files(o);
    for (std::size_t i = 0; i < files.size(); ++i)
      out.push_back(
          {.kind = source.numbered ? std::string(source.kind) + " " + std::to_string(i + 1) : source.kind,
           .file = tee::printable_path(files[i]),
           .sha256 = tee::to_hex(
               tee::sha256(tee::read_regular_file(files[i], source.kind, kMaxCollateralFileBytes)))});
  }
  return out;
}

// --gpu-rims: NVIDIA's RIMs, each signature checked once under the RIM root, then the same checks as
// verify-evidence's --rim for every GPU (tee/evidence/nvidia_verify.h).
struct GpuRims {
  std::string dir;
  std::vector<ev::Rim> rims;
  std::vector<ev::CheckOutcome> signatures;
  std::string revocation;  // what --gpu-rim-crl checked of their signing chain (ev::rim_revocation_text)

  static GpuRims load(const std::string& dir, const tee::Certificate& rim_root, const ev::RimCrls& crls) {
    GpuRims out{.dir = dir, .rims = {}, .signatures = {}, .revocation = ""};
    for (const std::string& f : rim_files(dir)) {
      out.rims.push_back(ev::load_rim(f));
      out.signatures.push_back(ev::check_rim_signature(out.rims.back(), rim_root, std::nullopt, crls));
    }
    out.revocation = ev::rim_revocation_text(out.rims, rim_root, crls, std::nullopt);
    return out;
  }

  // The RIM signatures, versions and golden values after `checks`; nothing without --gpu-rims.
  void check(const ev::GpuEvidence& gpu, std::vector<ev::CheckOutcome>& checks) const {
    if (rims.empty()) return;
    checks.insert(checks.end(), signatures.begin(), signatures.end());
    ev::GoldenComparison cmp;
    const std::vector<ev::CheckOutcome> golden = ev::check_against_rims(gpu, rims, cmp);
    checks.insert(checks.end(), golden.begin(), golden.end());
  }

  std::string describe() const {
    return rims.empty()
               ? "GPU RIMs: not checked (no --gpu-rims)"
               : "GPU RIMs: " + std::to_string(rims.size()) + " from " + dir + " checked; " + revocation;
  }
};

// The checks of verify-evidence for each kind, then the trust roots check and the policy: a peer's
// evidence passes only if every one does (the first failure is the refusal, in verify-evidence's words;
// every field the policy refuses is named).
class VendorVerifier final : public comm::RealEvidenceVerifier {
 public:
  VendorVerifier(ev::EvidenceRoots roots, ev::TestRoots allowed, std::vector<std::string> crl_paths,
                 std::vector<std::shared_ptr<X509_crl_st>> crls, tee::StaleCrl stale_crl,
                 std::optional<ev::EvidencePolicy> policy, ev::IntelCollateral collateral, GpuRims rims,
                 std::vector<comm::CollateralDigest> files)
      : roots_(std::move(roots)),
        allowed_(allowed),
        crl_paths_(std::move(crl_paths)),
        crls_(std::move(crls)),
        stale_crl_(stale_crl),
        policy_(std::move(policy)),
        collateral_(std::move(collateral)),
        rims_(std::move(rims)),
        files_(std::move(files)) {}

  comm::RealVerdict verify(const comm::RealAttestationKind& kind, const comm::RealEvidence& e,
                           const tee::Sha256Digest& challenge) const override {
    const tee::ReportData expected = tee::report_data_of(challenge);
    comm::RealVerdict v =
        kind.cpu == comm::CpuTee::Tdx ? verify_tdx(e.cpu, expected) : verify_snp(e, expected);
    if (!v || !kind.gpu) return v;
    const comm::RealVerdict g = verify_gpus(e.gpu, challenge);
    if (!g) return g;
    v.measurements += "; " + g.measurements;
    return v;
  }

  std::string describe() const override {
    const std::string roots = roots_.test
                                  ? "TEST ROOTS (--allow-test-roots: no vendor vouches for this evidence)"
                                  : "the vendors' roots (Intel, AMD, NVIDIA; bundled)";
    const std::string policy =
        policy_ ? "policy " + short_hex(tee::to_hex(ev::policy_digest(*policy_)), 16)
                : "no --attestation-policy: measurements recorded, NOT checked (debug refused)";
    std::string crls = crls_.empty() ? "revocation NOT checked (no --evidence-crl)"
                                     : std::to_string(crls_.size()) + " revocation list(s)";
    if (const std::string old = ev::expired_crls_accepted(crl_paths_, crls_, std::nullopt); !old.empty())
      crls += "; " + ev::expired_collateral_accepted(old);
    const std::string intel = collateral_.unchecked_and_expired(std::nullopt);
    return roots + "; " + policy + "; " + crls +
           "; Intel collateral: " + (collateral_.qe_identity ? "QE identity checked" : "") +
           (collateral_.qe_identity && collateral_.tcb_info ? ", " : "") +
           (collateral_.tcb_info ? "TCB status checked" : "") +
           ((collateral_.qe_identity || collateral_.tcb_info) && !intel.empty() ? "; " : "") + intel +
           "; AMD TCB collateral NOT checked; " + rims_.describe();
  }

  comm::RealVerifierFacts facts() const override {
    return {.test_roots = roots_.test,
            .policy_digest = policy_ ? tee::to_hex(ev::policy_digest(*policy_)) : "",
            .crls = crls_.size(),
            .collateral = files_};
  }

 private:
  // The vendor checks, the roots check and the policy, as one refusal or the measurements verified.
  comm::RealVerdict finish(const std::string& what, std::vector<ev::CheckOutcome> checks,
                           const ev::VerifiedMeasurements& measured) const {
    // An expired list first: the chain check would refuse it without naming it. Accepted lists are
    // named by describe() instead.
    if (stale_crl_ == tee::StaleCrl::Refuse)
      if (const std::optional<ev::CheckOutcome> expired = ev::expired_crl(crl_paths_, crls_, std::nullopt))
        checks.insert(checks.begin(), *expired);
    checks.push_back(ev::check_roots(roots_, allowed_));
    for (const ev::CheckOutcome& c : checks)
      if (!c.ok) return refuse(what + ": " + ev::check_name(c.check) + " check failed: " + c.detail);
    // Without a policy file the empty policy still refuses debug (Note [Evidence policy]).
    const std::vector<ev::PolicyFailure> failures =
        ev::check_policy(policy_.value_or(ev::EvidencePolicy{}), measured);
    if (!failures.empty()) {
      std::string reason = what + ": off policy:";
      for (const ev::PolicyFailure& f : failures) reason += " " + f.detail + ";";
      reason.pop_back();
      return refuse(reason);
    }
    std::string m;
    for (const auto& [field, value] : measured.values)
      m += (m.empty() ? "" : ", ") + std::string(ev::policy_field_name(field)) + " " +
           (value.size() > 16 ? short_hex(value, 16) : value);
    return {.ok = true, .reason = "ok", .measurements = m};
  }

  comm::RealVerdict verify_tdx(const tee::ByteView cpu, const tee::ReportData& expected) const {
    ev::TdxQuote quote;
    try {
      quote = ev::parse_tdx_quote(cpu, "the TDX quote");
    } catch (const std::exception& e) {
      return refuse(std::string("malformed evidence: ") + e.what());
    }
    if (!std::equal(expected.begin(), expected.end(), quote.report_data().begin()))
      return refuse(key_substituted("REPORTDATA"));
    const ev::TdxTrust trust{roots_.intel_sgx_root, crls_, expected, std::nullopt, stale_crl_};
    std::vector<ev::CheckOutcome> checks = ev::verify_tdx_quote(quote, trust);
    const std::vector<ev::CheckOutcome> collateral =
        collateral_.check(quote, roots_.intel_sgx_root, std::nullopt,
                          policy_ ? ev::lowest_tcb_status(*policy_) : ev::kDefaultLowestTcbStatus);
    checks.insert(checks.end(), collateral.begin(), collateral.end());
    return finish("Intel TDX quote", std::move(checks), ev::measurements_of(quote));
  }

  comm::RealVerdict verify_snp(const comm::RealEvidence& e, const tee::ReportData& expected) const {
    ev::SnpReport report;
    std::vector<tee::Certificate> vcek;
    try {
      report = ev::parse_snp_report(e.cpu, "the SEV-SNP report");
      if (e.cpu_certs.empty()) return refuse("malformed evidence: an SEV-SNP report without its VCEK");
      vcek = vcek_chain(e.cpu_certs);
    } catch (const std::exception& ex) {
      return refuse(std::string("malformed evidence: ") + ex.what());
    }
    if (!std::equal(expected.begin(), expected.end(), report.report_data().begin()))
      return refuse(key_substituted("REPORT_DATA"));
    const ev::SnpTrust trust{roots_.amd_roots, crls_, expected, std::nullopt, stale_crl_};
    if (ev::root_for(trust, vcek.front()) == nullptr)
      return refuse(
          "AMD SEV-SNP report: certificate chain check failed: its VCEK is not issued by a trusted AMD root");
    return finish("AMD SEV-SNP report", ev::verify_snp_report(report, vcek, trust),
                  ev::measurements_of(report));
  }

  comm::RealVerdict verify_gpus(const std::vector<std::uint8_t>& json,
                                const tee::Sha256Digest& challenge) const {
    std::vector<ev::GpuEvidence> gpus;
    try {
      gpus = ev::parse_sdk_evidence_json(
          std::string_view(reinterpret_cast<const char*>(json.data()), json.size()), "the GPU evidence");
    } catch (const std::exception& ex) {
      return refuse(std::string("malformed evidence: ") + ex.what());
    }
    if (gpus.empty()) return refuse("malformed evidence: GPU evidence for no GPU");
    const ev::EvidenceTrust trust{roots_.nvidia_device_root, crls_, tee::gpu_nonce_of(challenge),
                                  std::nullopt, stale_crl_};
    std::string m;
    for (const ev::GpuEvidence& gpu : gpus) {
      std::vector<ev::CheckOutcome> checks = ev::verify_gpu_evidence(gpu, trust);
      rims_.check(gpu, checks);
      const comm::RealVerdict v =
          finish("NVIDIA " + gpu.source, std::move(checks), ev::measurements_of(gpu, rims_.rims));
      if (!v) return v;
      m += (m.empty() ? "" : "; ") + gpu.source + ": " + v.measurements;
    }
    return {.ok = true, .reason = "ok", .measurements = m};
  }

  ev::EvidenceRoots roots_;
  ev::TestRoots allowed_;
  std::vector<std::string> crl_paths_;  // --evidence-crl, for messages
  std::vector<std::shared_ptr<X509_crl_st>> crls_;
  tee::StaleCrl stale_crl_;
  std::optional<ev::EvidencePolicy> policy_;
  ev::IntelCollateral collateral_;
  GpuRims rims_;
  std::vector<comm::CollateralDigest> files_;  // Note [Collateral in the agreed inputs]
};

class HardwareProver final : public comm::RealEvidenceProver {
 public:
  HardwareProver(std::filesystem::path tsm_dir, std::filesystem::path vcek, std::chrono::seconds timeout)
      : tsm_dir_(std::move(tsm_dir)), vcek_(std::move(vcek)), timeout_(timeout) {}

  comm::RealEvidence gather(const comm::RealAttestationKind& kind,
                            const tee::Sha256Digest& challenge) override {
    ev::GatherRequest cpu{
        .source = kind.cpu == comm::CpuTee::Tdx ? ev::EvidenceSource::Tdx : ev::EvidenceSource::Snp,
        .report_data = tee::report_data_of(challenge),
        .tsm_dir = tsm_dir_,
        .timeout = timeout_};
    comm::RealEvidence out{.cpu = ev::gather_evidence(cpu).evidence, .cpu_certs = {}, .gpu = {}};
    if (!vcek_.empty())  // after the report: the VCEK of the TCB it was signed at
      out.cpu_certs = tee::read_regular_file(vcek_, "--vcek", comm::RealEvidenceMessage::kMaxCertBytes);
    if (kind.gpu) {
      // Note [GPU nonce from the challenge]: the GPUs sign its 32 bytes; the rest stays zero.
      ev::GatherRequest gpu = cpu;
      gpu.source = ev::EvidenceSource::Gpu;
      gpu.report_data = tee::report_data_of(tee::gpu_nonce_of(challenge));
      out.gpu = ev::gather_evidence(gpu).evidence;
    }
    return out;
  }

 private:
  std::filesystem::path tsm_dir_;
  std::filesystem::path vcek_;
  std::chrono::seconds timeout_;
};

}  // namespace

std::shared_ptr<const comm::RealEvidenceVerifier> make_real_verifier(const RealAttestationOptions& o) {
  if (o.allow_test_roots && o.test_roots.empty())
    throw InputError("--allow-test-roots needs --test-roots DIR (the test roots to allow)");
  std::vector<std::shared_ptr<X509_crl_st>> crls;
  for (const std::string& crl : o.crls) crls.push_back(ev::load_crl(crl));
  std::optional<ev::EvidencePolicy> policy;
  if (!o.policy.empty()) policy = ev::load_policy(o.policy);
  ev::IntelCollateral collateral = ev::load_intel_collateral(
      {.qe_identity = o.qe_identity,
       .tcb_info = o.tcb_info,
       .collateral_chain = o.collateral_chain,
       .stale = o.allow_expired_collateral ? ev::StaleCollateral::Accept : ev::StaleCollateral::Refuse});
  ev::EvidenceRoots roots = o.test_roots.empty() ? ev::bundled_roots() : ev::load_test_roots(o.test_roots);
  GpuRims rims =
      GpuRims::load(o.gpu_rims, roots.nvidia_rim_root,
                    ev::load_rim_crls(o.gpu_rim_crls, o.allow_expired_collateral ? tee::StaleCrl::Accept
                                                                                 : tee::StaleCrl::Refuse));
  return std::make_shared<const VendorVerifier>(
      std::move(roots), o.allow_test_roots ? ev::TestRoots::Allow : ev::TestRoots::Refuse, o.crls,
      std::move(crls), o.allow_expired_collateral ? tee::StaleCrl::Accept : tee::StaleCrl::Refuse,
      std::move(policy), std::move(collateral), std::move(rims), collateral_digests(o));
}

comm::RealAttestation make_real_attestation(const comm::RealAttestationKind& kind,
                                            const RealAttestationOptions& options, int rank) {
  const std::filesystem::path tsm = options.tsm_dir.empty()
                                        ? std::filesystem::path(ev::kDefaultTsmDir)
                                        : std::filesystem::path(expand_rank(options.tsm_dir, rank));
  if (const auto absent = ev::tsm_absence(tsm))
    throw InputError("--attestation " + std::string(kind.name) + ": rank " + std::to_string(rank) + ": " +
                     *absent +
                     "; run on a confidential VM (scripts/check-confidential-vm.sh says what it "
                     "lacks), or keep the emulated vendor (--attestation certified)");
  if (kind.cpu == comm::CpuTee::Snp && (!options.qe_identity.empty() || !options.tcb_info.empty()))
    throw InputError(
        "--qe-identity and --tcb-info are Intel's collateral for TDX quotes: drop them with --attestation " +
        std::string(kind.name));
  if (kind.cpu == comm::CpuTee::Snp && options.vcek.empty())
    throw InputError("--attestation " + std::string(kind.name) +
                     " needs this rank's VCEK: --vcek FILE (AMD's key distribution service serves it for "
                     "the chip's CHIP_ID and REPORTED_TCB; docs/confidential-vms.md)");
  const std::filesystem::path vcek =
      options.vcek.empty() ? std::filesystem::path() : std::filesystem::path(expand_rank(options.vcek, rank));
  return {.kind = kind,
          .prover = std::make_shared<HardwareProver>(tsm, vcek, options.gather_timeout),
          .verifier = make_real_verifier(options)};
}

}  // namespace tt
