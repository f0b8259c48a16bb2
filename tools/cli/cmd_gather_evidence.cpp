// `teetrain gather-evidence`: asks this machine's confidential hardware (tee/evidence/gather.h) to sign
// a challenge and saves what it returned, for `verify-evidence`: an Intel TDX quote or an AMD SEV-SNP
// report through the kernel's configfs-tsm, or NVIDIA GPU evidence through NVML. The challenge is
// --nonce, or derived from a verifier's nonce, a rank and its X25519 key as docs/design.md §12 binds
// a key-exchange key (tee/identity/kx_binding.h). Exit 2 where the hardware is absent, naming what is
// missing.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "tee/evidence/gather.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"
#include "tools/cli/commands.h"
#include "tools/cli/tee_options.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

namespace ev = tee::evidence;

struct GatherOptions {
  std::string source = "auto";
  std::string nonce;
  std::string verifier_nonce;
  std::optional<std::uint32_t> rank;
  std::string kx_public;
  std::string out;
  std::string tsm_dir = ev::kDefaultTsmDir;
  int timeout_s = 60;
};

// --nonce as given, or the design's binding of a rank's key (printed, so the verifier can compare).
tee::ReportData challenge_of(const GatherOptions& o) {
  const bool derive = !o.verifier_nonce.empty() || o.rank || !o.kx_public.empty();
  if (derive == !o.nonce.empty() || (derive && (o.verifier_nonce.empty() || !o.rank || o.kx_public.empty())))
    throw InputError(
        "give the challenge: --nonce HEX, or --verifier-nonce HEX --rank N --kx-public HEX to derive it from "
        "a rank's key-exchange key (docs/design.md §12), not both");
  if (!derive) return *parse_report_data_hex(o.nonce);
  const auto verifier_nonce =
      parse_hex32(o.verifier_nonce, "--verifier-nonce", "the verifier's 32-byte nonce");
  const auto kx_public = parse_hex32(o.kx_public, "--kx-public", "the rank's X25519 public key");
  const tee::Sha256Digest challenge = tee::kx_challenge(verifier_nonce, *o.rank, kx_public);
  std::printf("challenge     %s = SHA-256(\"%s\" || verifier nonce || be32(rank %u) || X25519 public key)\n",
              tee::to_hex(challenge).c_str(), std::string(tee::kKxBindingLabel).c_str(), *o.rank);
  return tee::report_data_of(challenge);
}

// The --nonce that verify-evidence takes for this REPORTDATA: the 32-byte challenge when the rest is zero.
std::string verify_nonce_hex(const tee::ReportData& rd) {
  const bool challenge = std::all_of(rd.begin() + 32, rd.end(), [](std::uint8_t b) { return b == 0; });
  return tee::to_hex(challenge ? tee::ByteView(rd).first(32) : tee::ByteView(rd));
}

void write_outputs(const ev::GatheredEvidence& g, const std::string& out) {
  tee::write_file_atomic(out, g.evidence, 0644, "--out");
  std::printf("wrote         %s (%zu bytes: %s)\n", tee::printable_path(out).c_str(), g.evidence.size(),
              g.what.c_str());
  // FILE.certs always belongs to FILE: written when the host supplied certificates, removed otherwise.
  const std::string certs = out + ".certs";
  if (!g.certificates.empty()) {
    tee::write_file_atomic(certs, g.certificates, 0644, "--out");
    std::printf("wrote         %s (%zu bytes: the certificate table the host supplied)\n",
                tee::printable_path(certs).c_str(), g.certificates.size());
  } else if (::unlink(certs.c_str()) == 0) {
    std::printf("removed       %s (this report came without certificates)\n",
                tee::printable_path(certs).c_str());
  }
}

void run_gather(const GatherOptions& o) {
  ev::GatherRequest req;
  req.source = *ev::source_from_name(o.source);
  req.report_data = challenge_of(o);
  req.tsm_dir = o.tsm_dir;
  req.timeout = std::chrono::seconds(o.timeout_s);
  const ev::GatheredEvidence g = ev::gather_evidence(req);
  std::printf("source        %s: %s\n", ev::source_name(g.source), g.origin.c_str());
  std::printf("report data   %s\n", tee::to_hex(req.report_data).c_str());
  write_outputs(g, o.out);
  for (const std::string& note : g.notes) std::fprintf(stderr, "teetrain: note: %s\n", note.c_str());
  std::printf("verify with   teetrain verify-evidence %s --nonce %s\n", tee::printable_path(o.out).c_str(),
              verify_nonce_hex(req.report_data).c_str());
}

}  // namespace

void register_gather_evidence(CLI::App& app) {
  auto o = std::make_shared<GatherOptions>();
  auto* cmd = app.add_subcommand(
      "gather-evidence",
      "Gather REAL attestation evidence on confidential hardware for verify-evidence: an Intel TDX quote or "
      "an "
      "AMD SEV-SNP report (the kernel's configfs-tsm; its 64-byte REPORTDATA is the challenge followed by 32 "
      "zero bytes), or NVIDIA GPU evidence (NVML, loaded at run time; the attestation SDK's JSON). Exit 2 "
      "naming what is missing where the hardware is absent (then verify the published samples with "
      "verify-evidence; training keeps the emulated vendor), 1 when it fails or times out, 3 when what it "
      "returned does not answer the challenge. Needs root for configfs-tsm. Does not change training's "
      "handshake, which stays emulated");
  cmd->add_option("--source", o->source,
                  "tdx or snp (configfs-tsm), gpu (NVML), or auto: the first present, the CPU TEE first")
      ->check(CLI::IsMember({"tdx", "snp", "gpu", "auto"}))
      ->capture_default_str();
  cmd->add_option(
      "--nonce", o->nonce,
      "The challenge: 64 hex digits (a CPU TEE's REPORTDATA is it followed by 32 zero bytes), or 128 "
      "for all of REPORTDATA (CPU TEEs only)");
  cmd->add_option(
      "--verifier-nonce", o->verifier_nonce,
      "Instead of --nonce: the verifier's 32-byte nonce (64 hex digits); with --rank and --kx-public "
      "the challenge is SHA-256(\"teetrain kx v1\" || verifier nonce || be32(rank) || X25519 key)");
  cmd->add_option("--rank", o->rank, "The rank whose key is bound (with --verifier-nonce)");
  cmd->add_option("--kx-public", o->kx_public,
                  "The rank's X25519 public key, 64 hex digits (with --verifier-nonce)");
  cmd->add_option(
         "--out", o->out,
         "Where to save the evidence: the quote or report as the hardware returned it (and FILE.certs, "
         "SEV-SNP's certificate table, when the host supplies one), or the GPUs' JSON")
      ->required();
  cmd->add_option("--tsm-dir", o->tsm_dir, "The configfs-tsm report directory (where configfs is mounted)")
      ->capture_default_str();
  cmd->add_option(
         "--timeout", o->timeout_s,
         "Seconds to wait for the hardware (a TDX quote waits for a quote service outside the guest)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->callback([o] { run_gather(*o); });
}

}  // namespace tt::cli
