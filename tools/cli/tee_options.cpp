#include "tools/cli/tee_options.h"

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/evidence/gather.h"
#include "tools/cli/validators.h"

namespace tt::cli {

void add_adversary_option(CLI::App* g, std::optional<comm::AdversarySpec>& out) {
  g->add_option_function<std::string>(
       "--adversary", [&out](const std::string& spec) { out = comm::parse_adversary(spec); },
       "Teaching: put an attacker on the links between ranks (docs/labs/). snoop[:DIR] records what "
       "crosses each link and prints the adversary's view; flip:N, drop:N, replay:N, reorder:N, "
       "truncate:N, delay:N:MS attack the N-th gradient message rank R sends (append @R, default @0; the "
       "banner names its receivers); rewrite:N replays the previous message in place of the N-th with its "
       "clear header rewritten to the N-th's, rewrite:N:fit also cut or padded to the N-th's length; "
       "mitm[:cert] replaces rank R's attestation evidence with a relay's; "
       "oversize[:BYTES] sends BYTES (default 64 MiB) where that evidence belongs; mitm-relay runs its own "
       "handshake with both ends of the link and re-seals every message (it reads "
       "everything under --attestation none; a root of trust refuses it); stale-nonce, substitute-key, "
       "reflect and relay change the handshake's nonce or evidence on that link (a stale answer, another "
       "key, rank R+1's own evidence, rank R+2's evidence)")
      ->type_name("SPEC");
}

void add_tee_options(CLI::App* cmd, TeeOptions& o) {
  auto* g = cmd->add_option_group("TEE mode (confidential computing emulation)");
  TeeSettings& t = o.settings;
  add_enum_option(
      g, "--tee", t.mode,
      "off: plaintext; cc: H100 CC as measured by Lee et al. (whole-chunk seal, per-hop re-seal, bounce "
      "ingress); fast: pipelined segments, forward-ciphertext all-gather, crypto threads, direct ingress");
  add_enum_option(g, "--cipher", t.cipher, "AEAD cipher");
  g->add_option("--rekey-mb", t.rekey_mb, "Rotate each key after this many MiB (HKDF ratchet)")
      ->check(positive())
      ->capture_default_str();
  add_enum_option(g, "--tee-pipeline", t.pipeline,
                  "Cut ring chunks into segments that seal/send/open in a pipeline");
  add_enum_option(g, "--tee-forward-ag", t.forward_ag,
                  "All-gather forwards the owner's ciphertext instead of re-sealing per hop");
  g->add_option("--crypto-threads", t.crypto_threads,
                "Threads sealing/opening segments in parallel (0 = mode default)")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(g, "--tee-direct-ingress", t.direct_ingress,
                  "Open each batch once with the released dataset key (off: bounce path)");
  add_enum_option(
      g, "--tee-device-crypto", t.device_crypto,
      "Seal/open gradients where they live, on the GPU: --device cuda runs our CUDA AES-GCM in the device "
      "ring; --compute emulate waits at the GPU's AES-GCM rate (--gpu-aead-gbps). off: the host seals "
      "them, as H100 CC's bounce buffers. No effect on CPU compute");
  add_trust_options(g, o.trust);
  add_adversary_option(g, o.adversary);
  g->add_option(
       "--key-file", o.key_file,
       "Master key for sealed data and checkpoints: the data owner's, the one the data was sealed with "
       "(`teetrain keygen` creates a key only for sealing new data); not used with --tee off, where data "
       "and checkpoints are plain")
      ->capture_default_str();
  g->add_flag("--allow-plain-data", o.allow_plain_data, "Accept plaintext token shards in TEE mode");
}

namespace {

// --gpu-rims and the revocation lists of their signing chain (engine/keys/real_attestation.h).
void add_gpu_rim_options(CLI::App* g, RealAttestationOptions& r) {
  g->add_option("--gpu-rims", r.gpu_rims,
                "--attestation tdx+gpu|snp+gpu: a directory of NVIDIA's driver and VBIOS RIMs (from "
                "https://rim.attestation.nvidia.com/v1/rim/<id>); a peer GPU whose measurements differ is "
                "refused, naming the index. Without it: RIMs not checked (every report says so)");
  g->add_option("--gpu-rim-crl", r.gpu_rim_crls,
                "--gpu-rims: NVIDIA's revocation list (PEM or DER) for a CA of the RIMs' signing chain, or a "
                "directory of them (repeatable; docs/confidential-vms.md says where to fetch them): a RIM "
                "signed by a revoked certificate refuses every peer GPU (exit 3, naming it). Without one "
                "for each CA: that certificate's revocation NOT checked (every report says so)");
}

}  // namespace

void add_trust_options(CLI::App* g, TrustOptions& t) {
  // A string checked against the two names (clear error text), stored as the enum.
  g->add_option_function<std::string>(
       "--attestation",
       [&t](const std::string& v) {
         t.mode = v == "none" ? comm::AttestationMode::None : comm::AttestationMode::Certified;
         if (const auto real = comm::real_attestation_kind(v)) {
           t.mode = comm::AttestationMode::Real;
           t.real_kind = *real;
         }
       },
       "certified: peers prove a vendor-certified (EMULATED) device identity, a policy-approved binary and "
       "configuration, and liveness before any key is agreed; none: no root of trust (flagged in every "
       "report: an on-path adversary can read everything); tdx, snp: on confidential VMs, each rank's "
       "Intel TDX quote or AMD SEV-SNP report binds its key (configfs-tsm), +gpu adds its NVIDIA GPUs' "
       "evidence (NVML) answering a nonce derived from the same challenge (docs/confidential-vms.md)")
      ->check(CLI::IsMember({"certified", "none", "tdx", "snp", "tdx+gpu", "snp+gpu"}))
      ->default_str("certified");
  g->add_option("--tsm-dir", t.real.tsm_dir,
                "--attestation tdx|snp: the kernel's configfs-tsm report directory; {rank} in the path "
                "becomes the rank")
      ->default_str(tee::evidence::kDefaultTsmDir);
  g->add_option("--attestation-policy", t.real.policy,
                "--attestation tdx|snp[+gpu]: the measurements peers may run (MRTD, RTMRs, SEV-SNP "
                "MEASUREMENT, TCB minimums, GPU driver and VBIOS versions: tee/evidence/evidence_policy.h); "
                "without it they are recorded, not checked, and debug is refused");
  g->add_option("--evidence-crl", t.real.crls,
                "--attestation tdx|snp[+gpu]: a revocation list for the vendors' chains (PEM or DER; "
                "repeatable); without one revocation is NOT checked (every report says so)");
  g->add_option(
      "--qe-identity", t.real.qe_identity,
      "--attestation tdx[+gpu]: Intel's QE identity JSON (Intel PCS v4 tdx/certification/v4/qe/identity, "
      "with --collateral-chain): every peer's quoting enclave must be the one it names, UpToDate");
  g->add_option("--tcb-info", t.real.tcb_info,
                "--attestation tdx[+gpu]: Intel's TDX TCB info JSON for the platforms' FMSPC (Intel PCS v4 "
                "tdx/certification/v4/tcb, with --collateral-chain): Revoked and OutOfDate peers are refused "
                "(the --attestation-policy's tdx.min_tcb_status may accept OutOfDate)");
  g->add_option("--collateral-chain", t.real.collateral_chain,
                "The PEM issuer chain Intel sends beside the QE identity and the TCB info");
  g->add_flag("--allow-expired-collateral", t.real.allow_expired_collateral,
              "Accept Intel collateral, --evidence-crl and --gpu-rim-crl lists past their nextUpdate (every "
              "report says EXPIRED collateral accepted and names each one)");
  add_gpu_rim_options(g, t.real);
  g->add_option("--test-roots", t.real.test_roots,
                "--attestation tdx|snp[+gpu]: verify under a TEST vendor's roots (tests/support/test_vendor) "
                "instead of Intel's, AMD's and NVIDIA's; evidence under them is refused unless "
                "--allow-test-roots");
  g->add_flag("--allow-test-roots", t.real.allow_test_roots,
              "Accept evidence under --test-roots (no vendor vouches for it: every report says TEST ROOTS)");
  g->add_option("--vcek", t.real.vcek,
                "--attestation snp: this rank's VCEK certificate (PEM or DER, from AMD's key distribution "
                "service), sent beside its report; {rank} in the path becomes the rank");
  g->add_option("--trust-root", t.trust_root,
                "Vendor root certificate (PEM) that verifies peers' device certificates; its revocation list "
                "must lie beside it (ROOT.crl, without it the run refuses). Create both with `teetrain "
                "provision`");
  g->add_flag("--no-revocation-check", t.no_revocation_check,
              "Run without the revocation list: a revoked device is accepted (flagged in every report)");
  g->add_flag("--allow-expired-crl", t.allow_expired_crl,
              "Accept a revocation list past its nextUpdate, or one without a CRL number (an older "
              "provision's, taken as number 0): a device revoked since may be accepted (flagged in every "
              "report)");
  g->add_option("--crl-state", t.crl_state,
                "This rank's memory of the highest revocation list number it accepted per vendor root: a "
                "lower one is refused (exit 3); {rank} in the path becomes the rank")
      ->default_str("DEVICE_IDENTITY.crl-state");
  g->add_option("--device-identity", t.device_identity,
                "This rank's device key and certificate (PEM); {rank} in the path becomes the rank, e.g. "
                "vendor/device_{rank}.pem: every rank needs its own identity");
  g->add_option("--policy", t.policy,
                "Reference measurements peers must match (lines 'binary HEX' / 'config HEX', see `teetrain "
                "attest --write-policy`); default: what this rank runs");
}

std::array<std::uint8_t, 32> parse_hex32(const std::string& hex, const std::string& flag,
                                         const std::string& what) {
  std::vector<std::uint8_t> raw;
  try {
    raw = tee::from_hex(hex);
  } catch (const std::invalid_argument&) {
  }
  if (raw.size() != 32) throw InputError(flag + ": expected 64 hex digits (" + what + ")");
  std::array<std::uint8_t, 32> n{};
  std::copy(raw.begin(), raw.end(), n.begin());
  return n;
}

std::optional<std::array<std::uint8_t, 32>> parse_nonce_hex(const std::string& hex) {
  if (hex.empty()) return std::nullopt;
  return parse_hex32(hex, "--nonce", "the 32-byte challenge you issued");
}

std::optional<std::array<std::uint8_t, 64>> parse_report_data_hex(const std::string& hex) {
  if (hex.empty()) return std::nullopt;
  std::array<std::uint8_t, 64> out{};
  const std::string what = "the 32-byte challenge you issued, or 128 for all 64 bytes of REPORTDATA";
  if (hex.size() != 128) {
    const auto first = parse_hex32(hex, "--nonce", what);
    std::copy(first.begin(), first.end(), out.begin());
    return out;
  }
  const auto first = parse_hex32(hex.substr(0, 64), "--nonce", what);
  const auto second = parse_hex32(hex.substr(64), "--nonce", what);
  std::copy(first.begin(), first.end(), out.begin());
  std::copy(second.begin(), second.end(), out.begin() + 32);
  return out;
}

}  // namespace tt::cli
