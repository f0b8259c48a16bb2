// `teetrain verify-evidence`: real NVIDIA GPU attestation evidence, verified offline against NVIDIA's
// bundled roots (tee/evidence/): the SDK's serialized evidence JSON, or the local verifier's report and
// certificate chain; optionally its reference integrity manifests (RIMs) and revocation lists. Also an
// Intel TDX quote or an AMD SEV-SNP report with its VCEK, against Intel's and AMD's bundled roots (or a
// test vendor's with --test-roots, Note [Test roots]); with --policy, its measurements against a
// verifier's policy (Note [Evidence policy]). Prints the evidence field by field, every check's outcome,
// and one verdict line; exit 0 verified, 3 refused (the first failed check, or every failing policy
// field), 2 malformed input.
#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>

#include "base/error.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/crl_currency.h"
#include "tee/evidence/evidence_policy.h"
#include "tee/evidence/intel_collateral.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/regular_file.h"
#include "tools/cli/commands.h"
#include "tools/cli/tee_options.h"

namespace tt::cli {
namespace {

namespace ev = tee::evidence;

struct EvidenceOptions {
  std::string file;
  std::string cert_chain;
  std::string vcek;
  std::string nonce;
  std::vector<std::string> rims;
  std::vector<std::string> crls;
  std::vector<std::string> gpu_rim_crls;  // NVIDIA's CRLs for the RIM signing chain: files or directories
  std::string at;
  std::string device_root;
  std::string rim_root;
  std::string test_roots;
  bool allow_test_roots = false;
  std::string policy;
  std::string qe_identity;
  std::string collateral_chain;
  std::string tcb_info;
  bool allow_expired_collateral = false;
};

// The roots to verify under: the vendors' bundled ones, or a test vendor's (Note [Test roots]).
ev::EvidenceRoots roots_of(const EvidenceOptions& o) {
  return o.test_roots.empty() ? ev::bundled_roots() : ev::load_test_roots(o.test_roots);
}

tee::StaleCrl stale_crl(const EvidenceOptions& o) {
  return o.allow_expired_collateral ? tee::StaleCrl::Accept : tee::StaleCrl::Refuse;
}

// The first expired --crl, as a failed collateral check ahead of `checks` (the chain check would fail
// on it too, without naming the list); none with --allow-expired-collateral (expired_crls_said).
void add_crl_currency(const EvidenceOptions& o, const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                      std::optional<std::int64_t> at, std::vector<ev::CheckOutcome>& checks) {
  if (o.allow_expired_collateral) return;
  if (const std::optional<ev::CheckOutcome> expired = ev::expired_crl(o.crls, crls, at))
    checks.insert(checks.begin(), *expired);
}

// What a verdict says of the expired --crl lists it accepted, after "; " (Note [Expired collateral
// wording]); empty when none.
std::string expired_crls_said(const EvidenceOptions& o, const std::vector<std::shared_ptr<X509_crl_st>>& crls,
                              std::optional<std::int64_t> at) {
  const std::string said = ev::expired_collateral_accepted(ev::expired_crls_accepted(o.crls, crls, at));
  return said.empty() ? "" : "; " + said;
}

// The trust roots check, appended to every evidence's checks: test roots only with --allow-test-roots.
void add_roots_check(const EvidenceOptions& o, const ev::EvidenceRoots& roots,
                     std::vector<ev::CheckOutcome>& checks) {
  checks.push_back(ev::check_roots(roots, o.allow_test_roots ? ev::TestRoots::Allow : ev::TestRoots::Refuse));
}

// The policy's verdict on verified evidence (Note [Evidence policy]): every failing field printed and
// named in one refusal; otherwise what the verdict line says about the measurements.
std::string apply_policy(const EvidenceOptions& o, const ev::VerifiedMeasurements& m) {
  if (o.policy.empty()) return "measurements NOT checked against a policy (no --policy)";
  const ev::EvidencePolicy policy = ev::load_policy(o.policy);
  const std::string digest = tee::to_hex(ev::policy_digest(policy)).substr(0, 16);
  const std::vector<ev::PolicyFailure> failures = ev::check_policy(policy, m);
  std::printf("policy %s (sha256 %s...): %s\n", tee::printable_path(o.policy).c_str(), digest.c_str(),
              failures.empty() ? "passes" : "REFUSES");
  std::string refusal;
  for (const ev::PolicyFailure& f : failures) {
    std::printf("  %s\n", f.detail.c_str());
    refusal += (refusal.empty() ? "" : "; ") + f.detail;
  }
  if (!failures.empty())
    throw IntegrityError("evidence REFUSED: " + m.source + ": policy check failed: " + refusal);
  std::string unchecked;
  for (const std::string& name : ev::unconstrained_fields(policy, m.kind))
    unchecked += (unchecked.empty() ? "" : ", ") + name;
  return "policy " + digest + "... passes" +
         (unchecked.empty() ? "" : " (NOT constrained: " + unchecked + ")");
}

// The lowest TCB status Intel's TCB info may give the platform: the policy's, or the default.
ev::TcbStatus lowest_tcb_status(const EvidenceOptions& o) {
  return o.policy.empty() ? ev::kDefaultLowestTcbStatus : ev::lowest_tcb_status(ev::load_policy(o.policy));
}

// How every verdict line starts: under test roots it says so first.
const char* verified(const ev::EvidenceRoots& roots) {
  return roots.test
             ? "verdict: VERIFIED under TEST ROOTS (--allow-test-roots: no vendor vouches for this evidence)"
             : "verdict: VERIFIED";
}

// --at YYYY-MM-DD (UTC midnight) as Unix time.
std::optional<std::int64_t> parse_date(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  if (end == nullptr || *end != '\0' || tm.tm_year < 70)
    throw InputError("--at '" + text + "': expected a date YYYY-MM-DD (1970 or later)");
  return static_cast<std::int64_t>(timegm(&tm));
}

// The NVIDIA evidence in the file's bytes (read once): the SDK's JSON, or a hex report with --cert-chain.
std::vector<ev::GpuEvidence> load_gpus(const EvidenceOptions& o, const std::vector<std::uint8_t>& bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string where = tee::printable_path(o.file);
  if (!o.cert_chain.empty()) {
    const std::vector<std::uint8_t> chain =
        tee::read_regular_file(o.cert_chain, "--cert-chain", ev::kMaxEvidenceFileBytes);
    return {ev::parse_report_pair(
        text, std::string_view(reinterpret_cast<const char*>(chain.data()), chain.size()), where)};
  }
  if (!ev::looks_like_json(text))
    throw InputError(
        "evidence '" + where +
        "': neither the attestation SDK's JSON, a TDX quote nor an SEV-SNP report; a hex "
        "attestation report needs --cert-chain FILE, an SEV-SNP report its VCEK with --vcek FILE");
  return ev::parse_sdk_evidence_json(text, where);
}

std::vector<std::shared_ptr<X509_crl_st>> load_crls(const EvidenceOptions& o) {
  std::vector<std::shared_ptr<X509_crl_st>> crls;
  for (const std::string& crl : o.crls) crls.push_back(ev::load_crl(crl));
  return crls;
}

ev::EvidenceTrust make_trust(const EvidenceOptions& o, const ev::EvidenceRoots& roots) {
  return {o.device_root.empty() ? roots.nvidia_device_root : tee::Certificate::load_pem(o.device_root),
          load_crls(o), parse_nonce_hex(o.nonce), parse_date(o.at), stale_crl(o)};
}

void print_checks(const std::vector<ev::CheckOutcome>& checks) {
  for (const ev::CheckOutcome& c : checks)
    std::printf("  %-20s%s: %s\n", ev::check_name(c.check), c.ok ? "ok" : "FAILED", c.detail.c_str());
}

void print_mismatches(const ev::GoldenComparison& cmp) {
  for (const ev::MeasurementMismatch& m : cmp.mismatches)
    std::printf("    block %d (RIM index %d, %s): measured %s\n", m.index + 1, m.index, m.rim.c_str(),
                m.actual.empty() ? "nothing (no such block)" : tee::to_hex(m.actual).c_str());
  for (int i : cmp.skipped)
    std::printf("    block %d (RIM index %d) not compared: NVDEC0 is disabled (as NVIDIA's verifier does)\n",
                i + 1, i);
}

// The RIMs, each with its own signature checked once (not per GPU), and what the verdict says of their
// signing chain's revocation (--gpu-rim-crl).
struct LoadedRims {
  std::vector<ev::Rim> rims;
  std::vector<ev::CheckOutcome> signatures;
  std::string revocation;
};

LoadedRims load_rims(const EvidenceOptions& o, const ev::EvidenceRoots& roots,
                     std::optional<std::int64_t> at) {
  if (o.rims.empty() && !o.gpu_rim_crls.empty())
    throw InputError("--gpu-rim-crl revokes RIM signing certificates: give the RIMs it is for with --rim");
  const tee::Certificate root =
      o.rim_root.empty() ? roots.nvidia_rim_root : tee::Certificate::load_pem(o.rim_root);
  const ev::RimCrls crls = ev::load_rim_crls(o.gpu_rim_crls, stale_crl(o));
  LoadedRims out{.rims = {}, .signatures = {}, .revocation = ""};
  for (const std::string& path : o.rims) {
    out.rims.push_back(ev::load_rim(path));
    out.signatures.push_back(ev::check_rim_signature(out.rims.back(), root, at, crls));
  }
  if (!out.rims.empty()) out.revocation = ", " + ev::rim_revocation_text(out.rims, root, crls, at);
  return out;
}

// The first failed check of one GPU, as the refusal; nothing when all passed.
std::optional<std::string> first_failure(const ev::GpuEvidence& gpu,
                                         const std::vector<ev::CheckOutcome>& checks) {
  for (const ev::CheckOutcome& c : checks)
    if (!c.ok) return gpu.source + ": " + ev::check_name(c.check) + " check failed: " + c.detail;
  return std::nullopt;
}

// The first failed check of a CPU TEE's evidence, as the refusal.
void refuse_first_failure(const std::string& source, const std::vector<ev::CheckOutcome>& checks) {
  for (const ev::CheckOutcome& c : checks)
    if (!c.ok)
      throw IntegrityError("evidence REFUSED: " + source + ": " + ev::check_name(c.check) +
                           " check failed: " + c.detail);
}

// Intel's collateral read offline (--qe-identity, --tcb-info under --collateral-chain:
// tee/evidence/intel_collateral.h), its checks appended to `checks`. Returns what the verdict says of
// it: the TCB level found, each piece not given, each expired one accepted.
std::string check_tdx_collateral(const EvidenceOptions& o, const ev::TdxQuote& quote,
                                 const ev::TdxTrust& trust, std::vector<ev::CheckOutcome>& checks) {
  const ev::IntelCollateral collateral = ev::load_intel_collateral(
      {.qe_identity = o.qe_identity,
       .tcb_info = o.tcb_info,
       .collateral_chain = o.collateral_chain,
       .stale = o.allow_expired_collateral ? ev::StaleCollateral::Accept : ev::StaleCollateral::Refuse});
  const std::vector<ev::CheckOutcome> more =
      collateral.check(quote, trust.intel_root, trust.at_unix_time, lowest_tcb_status(o));
  checks.insert(checks.end(), more.begin(), more.end());
  std::string said = collateral.qe_identity ? "QE identity checked against Intel's collateral" : "";
  if (collateral.tcb_info)
    said += (said.empty() ? "" : "; ") + std::string("TCB info checked: ") + more.back().detail;
  const std::string rest = collateral.unchecked_and_expired(trust.at_unix_time);
  return said + (said.empty() || rest.empty() ? "" : "; ") + rest;
}

void run_tdx(const EvidenceOptions& o, const std::vector<std::uint8_t>& bytes) {
  if (!o.rims.empty() || !o.gpu_rim_crls.empty() || !o.cert_chain.empty())
    throw InputError("--rim, --gpu-rim-crl and --cert-chain are for NVIDIA evidence; '" +
                     tee::printable_path(o.file) + "' is a TDX quote (its PCK chain is inside it)");
  const ev::EvidenceRoots roots = roots_of(o);
  const ev::TdxTrust trust{
      o.device_root.empty() ? roots.intel_sgx_root : tee::Certificate::load_pem(o.device_root), load_crls(o),
      parse_report_data_hex(o.nonce), parse_date(o.at), stale_crl(o)};
  const ev::TdxQuote quote = ev::parse_tdx_quote(bytes, tee::printable_path(o.file));
  std::printf("%s", ev::describe(quote).c_str());
  std::vector<ev::CheckOutcome> checks = ev::verify_tdx_quote(quote, trust);
  add_crl_currency(o, trust.crls, trust.at_unix_time, checks);
  const std::string collateral = check_tdx_collateral(o, quote, trust, checks);
  add_roots_check(o, roots, checks);
  std::printf("checks\n");
  print_checks(checks);
  refuse_first_failure(quote.source, checks);
  const std::string policy = apply_policy(o, ev::measurements_of(quote));
  std::printf(
      "%s: Intel TDX quote: PCK chain to %s, QE report, attestation key, quote signature, report data %s; "
      "%s; %s%s\n",
      verified(roots), trust.intel_root.subject().c_str(), trust.report_data ? "(fresh)" : "NOT checked",
      policy.c_str(), collateral.c_str(), expired_crls_said(o, trust.crls, trust.at_unix_time).c_str());
}

// The verdict line: what was verified, and what was not (freshness, revocation, the debug policy).
void print_snp_verdict(const ev::SnpReport& report, const std::vector<tee::Certificate>& vcek,
                       const ev::SnpTrust& trust, const ev::EvidenceRoots& roots, const std::string& policy,
                       const std::string& expired) {
  const char* debug =
      report.debug_allowed()
          ? "WARNING: the guest's POLICY ALLOWS DEBUG (the hypervisor may read and change its memory)"
          : "policy: debug not allowed";
  const char* revocation = ev::applicable_crls(trust, vcek) > 0 ? ", not revoked by the given --crl"
                           : trust.crls.empty()
                               ? ", revocation NOT checked (no --crl)"
                               : ", revocation NOT checked (no --crl issued by a CA of the chain)";
  std::printf(
      "%s: AMD SEV-SNP report: VCEK chain to %s, report signature, chip id, reported TCB, "
      "report data %s%s; %s; %s%s\n",
      verified(roots), ev::root_for(trust, vcek.front())->ark.subject().c_str(),
      trust.report_data ? "(fresh)" : "NOT checked", revocation, debug, policy.c_str(), expired.c_str());
}

// An SEV-SNP report: with --vcek, whatever the file looks like (a damaged report is then named as one);
// without, when it is one by size, version and signature algorithm (ev::looks_like_snp_report).
void run_snp(const EvidenceOptions& o, const std::vector<std::uint8_t>& bytes) {
  const std::string where = tee::printable_path(o.file);
  if (ev::looks_like_tdx_quote(bytes) && !ev::looks_like_snp_report(bytes))
    throw InputError("--vcek is for an SEV-SNP report; '" + where + "' is a TDX quote (leave --vcek out)");
  if (!o.rims.empty() || !o.gpu_rim_crls.empty() || !o.cert_chain.empty())
    throw InputError("--rim, --gpu-rim-crl and --cert-chain are for NVIDIA evidence; '" + where +
                     "' is an SEV-SNP report (give its VCEK, and the ASK if it is not bundled, with --vcek)");
  if (o.vcek.empty())
    throw InputError("evidence '" + where +
                     "' is an AMD SEV-SNP report: give its VCEK certificate with --vcek FILE (AMD's key "
                     "distribution service serves it for the report's CHIP_ID and REPORTED_TCB)");
  const ev::SnpReport report = ev::parse_snp_report(bytes, where);
  const std::vector<tee::Certificate> vcek = ev::load_vcek(o.vcek);
  const ev::EvidenceRoots roots = roots_of(o);
  ev::SnpTrust trust{roots.amd_roots, load_crls(o), parse_report_data_hex(o.nonce), parse_date(o.at),
                     stale_crl(o)};
  if (!o.device_root.empty())
    trust.roots = {{"--device-root", tee::Certificate::load_pem(o.device_root), {}}};
  std::printf("%s%s", ev::describe(report).c_str(), ev::describe_vcek(vcek).c_str());
  std::vector<ev::CheckOutcome> checks = ev::verify_snp_report(report, vcek, trust);
  add_crl_currency(o, trust.crls, trust.at_unix_time, checks);
  add_roots_check(o, roots, checks);
  std::printf("checks\n");
  print_checks(checks);
  refuse_first_failure(report.source, checks);
  print_snp_verdict(report, vcek, trust, roots, apply_policy(o, ev::measurements_of(report)),
                    expired_crls_said(o, trust.crls, trust.at_unix_time));
}

// The verdict line of verified NVIDIA evidence: what was verified, and what was not.
void print_gpu_verdict(const EvidenceOptions& o, const std::vector<ev::GpuEvidence>& gpus,
                       const ev::EvidenceTrust& trust, const ev::EvidenceRoots& roots, const LoadedRims& rims,
                       const std::string& policy) {
  const bool revocation = std::all_of(gpus.begin(), gpus.end(), [&](const ev::GpuEvidence& g) {
    return ev::applicable_crls(trust.crls, trust.device_root, g.chain) > 0;
  });
  std::printf(
      "%s: %zu NVIDIA GPU(s): certificate chain to %s, report signature, nonce %s%s%s%s; %s%s\n",
      verified(roots), gpus.size(), trust.device_root.subject().c_str(),
      trust.nonce ? "(fresh)" : "NOT checked",
      rims.rims.empty() ? ", measurements NOT compared (no --rim)" : ", every measurement matches the RIMs",
      rims.revocation.c_str(),
      revocation           ? ", not revoked by the given --crl"
      : trust.crls.empty() ? ", revocation NOT checked (no --crl)"
                           : ", revocation NOT checked (no --crl issued by a CA of the chain)",
      policy.c_str(), expired_crls_said(o, trust.crls, trust.at_unix_time).c_str());
}

void run_verify_evidence(const EvidenceOptions& o) {
  if (o.allow_test_roots && o.test_roots.empty())
    throw InputError("--allow-test-roots needs --test-roots DIR (the test roots to allow)");
  const std::vector<std::uint8_t> bytes =
      tee::read_regular_file(o.file, "evidence", ev::kMaxEvidenceFileBytes);
  if (!o.vcek.empty() || (o.cert_chain.empty() && ev::looks_like_snp_report(bytes))) return run_snp(o, bytes);
  if (o.cert_chain.empty() && ev::looks_like_tdx_quote(bytes)) return run_tdx(o, bytes);
  const ev::EvidenceRoots roots = roots_of(o);
  const ev::EvidenceTrust trust = make_trust(o, roots);
  const std::vector<ev::GpuEvidence> gpus = load_gpus(o, bytes);
  const LoadedRims rims = load_rims(o, roots, trust.at_unix_time);
  std::optional<std::string> refusal;
  for (const ev::GpuEvidence& gpu : gpus) {
    std::printf("%s", ev::describe(gpu).c_str());
    std::vector<ev::CheckOutcome> checks = ev::verify_gpu_evidence(gpu, trust);
    add_crl_currency(o, trust.crls, trust.at_unix_time, checks);
    ev::GoldenComparison cmp;
    if (!rims.rims.empty()) {
      checks.insert(checks.end(), rims.signatures.begin(), rims.signatures.end());
      const std::vector<ev::CheckOutcome> golden = ev::check_against_rims(gpu, rims.rims, cmp);
      checks.insert(checks.end(), golden.begin(), golden.end());
    }
    add_roots_check(o, roots, checks);
    std::printf("checks\n");
    print_checks(checks);
    print_mismatches(cmp);
    if (!refusal) refusal = first_failure(gpu, checks);
  }
  if (refusal) throw IntegrityError("evidence REFUSED: " + *refusal);
  std::string policy;
  for (const ev::GpuEvidence& gpu : gpus) policy = apply_policy(o, ev::measurements_of(gpu, rims.rims));
  print_gpu_verdict(o, gpus, trust, roots, rims, policy);
}

// --rim, the revocation lists of the RIMs' signing chain, and the RIM root.
void add_rim_options(CLI::App* cmd, EvidenceOptions& o) {
  cmd->add_option(
      "--rim", o.rims,
      "An NVIDIA RIM (SWID tag XML: the driver's or the VBIOS's; repeatable): its signature is checked "
      "against NVIDIA's RIM root, then every active golden value against the measurements");
  cmd->add_option(
      "--gpu-rim-crl", o.gpu_rim_crls,
      "NVIDIA's revocation list (PEM or DER) for a CA of the RIMs' signing chain, or a directory of "
      "them (repeatable; fetched from the CRL distribution points of the RIMs' certificates: "
      "docs/confidential-vms.md): each RIM signing certificate is checked against its issuer's "
      "list; one without a list is reported as NOT checked");
  cmd->add_option("--rim-root", o.rim_root,
                  "Trust this root (PEM) for RIMs instead of NVIDIA's bundled RIM root");
}

}  // namespace

void register_verify_evidence(CLI::App& app) {
  auto o = std::make_shared<EvidenceOptions>();
  auto* cmd = app.add_subcommand(
      "verify-evidence",
      "Verify REAL attestation evidence offline. NVIDIA GPU evidence: the certificate chain to NVIDIA's "
      "device "
      "identity root (bundled), the ECDSA P-384 signature over the SPDM measurement request and response, "
      "the "
      "nonce; with --rim, NVIDIA's reference integrity manifests (their XML signatures and every golden "
      "value). "
      "An Intel TDX v4 quote: the PCK chain to Intel's SGX root (bundled), the QE report, the attestation "
      "key, "
      "the quote signature, REPORTDATA. An AMD SEV-SNP report with --vcek: the VCEK chain to AMD's ARK "
      "(Milan, Genoa; bundled), the report signature, chip id and reported TCB against the VCEK, "
      "REPORT_DATA. Prints every field and one verdict line; exit 0 verified, 3 refused "
      "(naming the failed check), 2 malformed input. No network: revocation only from --crl and "
      "--gpu-rim-crl");
  cmd->add_option(
         "FILE", o->file,
         "Evidence: the NVIDIA attestation SDK's serialized evidence JSON (one object per GPU), a hex "
         "attestation report (NVIDIA's local verifier's format) with --cert-chain, a binary Intel TDX "
         "v4 quote, or a binary AMD SEV-SNP attestation report (1184 bytes) with --vcek")
      ->required();
  cmd->add_option("--cert-chain", o->cert_chain,
                  "PEM certificate chain (leaf first) of a hex report in FILE");
  cmd->add_option("--vcek", o->vcek,
                  "The VCEK certificate of an SEV-SNP report in FILE (DER as AMD's key distribution service "
                  "serves it, or PEM; PEM may add the ASK after it): FILE is then read as an SEV-SNP report");
  cmd->add_option(
      "--nonce", o->nonce,
      "The challenge you issued (64 hex digits): the GPU's signed request must carry it; a TDX "
      "quote's REPORTDATA or an SEV-SNP report's REPORT_DATA must be it followed by 32 zero bytes, "
      "or give all 128 hex digits of the report data (default: freshness NOT checked)");
  add_rim_options(cmd, *o);
  cmd->add_option("--crl", o->crls,
                  "A revocation list (PEM or DER) issued by a CA of the chain (repeatable); without one, "
                  "revocation is NOT checked");
  cmd->add_option("--at", o->at,
                  "Check certificate validity on this date (YYYY-MM-DD, UTC) instead of now, e.g. for a RIM "
                  "whose signing certificate has since expired");
  cmd->add_option(
      "--device-root", o->device_root,
      "Trust this root (PEM) instead of the bundled one: NVIDIA's device identity root, Intel's "
      "SGX root for a TDX quote, or an AMD ARK for an SEV-SNP report (replacing the bundled ARKs and "
      "ASKs: give the ASK after the VCEK in --vcek)");
  cmd->add_option("--test-roots", o->test_roots,
                  "Verify under the TEST roots in this directory (tt_test_vendor roots: labelled \"teetrain "
                  "TEST\", never a vendor's) instead of the bundled ones; evidence under them is refused "
                  "(exit 3, naming the test root) unless --allow-test-roots");
  cmd->add_option(
      "--policy", o->policy,
      "A verifier's policy of real measurements (teetrain attestation-policy writes one): every "
      "field the evidence fails is named (exit 3); fields it leaves out are listed as NOT constrained");
  cmd->add_option(
      "--qe-identity", o->qe_identity,
      "Intel's QE identity JSON for a TDX quote (fetched from Intel PCS: docs/reference/"
      "verify-evidence.md), with --collateral-chain: the quoting enclave must be the one it names, at "
      "an UpToDate TCB level; expired collateral is refused");
  cmd->add_option(
      "--tcb-info", o->tcb_info,
      "Intel's TDX TCB info JSON for the platform's FMSPC (Intel PCS v4 tdx/certification/v4/tcb), with "
      "--collateral-chain: its FMSPC must be the PCK certificate's; the platform's TCB level (SGX "
      "components and PCESVN from the PCK certificate, TEE_TCB_SVN from the quote) is printed; Revoked "
      "and OutOfDate are refused (a --policy may accept OutOfDate: tdx.min_tcb_status)");
  cmd->add_option("--collateral-chain", o->collateral_chain,
                  "The PEM issuer chain Intel sends beside the QE identity and the TCB info (TCB signing "
                  "certificate, SGX root)");
  cmd->add_flag("--allow-expired-collateral", o->allow_expired_collateral,
                "Accept a revocation list (--crl, --gpu-rim-crl), QE identity or TCB info past its "
                "nextUpdate; the verdict names each one: EXPIRED collateral accepted");
  cmd->add_flag("--allow-test-roots", o->allow_test_roots,
                "Accept evidence under --test-roots (tests only): the verdict then says TEST ROOTS");
  cmd->callback([o] { run_verify_evidence(*o); });
}

}  // namespace tt::cli
