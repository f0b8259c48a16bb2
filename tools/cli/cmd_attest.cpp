// `teetrain provision` and `teetrain attest`: the emulated vendor root of trust and attestation, for
// running TEE mode and for teaching. provision plays the GPU vendor (tee/identity/vendor.h); attest prints
// this binary's signed evidence field by field, verifies saved evidence, or writes a verifier policy.
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "comm/secure/attest_evidence.h"
#include "engine/keys/tee_session.h"
#include "tee/identity/attestation.h"
#include "tee/identity/vendor.h"
#include "tee/regular_file.h"
#include "tools/cli/commands.h"
#include "tools/cli/tee_options.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct AttestOptions {
  TrustOptions trust;
  std::string config = "{}";
  std::string config_file;
  std::string out;
  std::string verify;
  std::string nonce;
  std::string write_policy;
  uint32_t rank = 0;
};

std::string read_config(const AttestOptions& o) {
  if (o.config_file.empty()) return o.config;
  const std::vector<std::uint8_t> text = tee::read_regular_file(o.config_file, "--config-file", 64u << 20);
  return {text.begin(), text.end()};
}

void verify_file(const AttestOptions& o, const comm::AttestConfig& ac) {
  if (!ac.anchor && ac.mode == comm::AttestationMode::Certified) {
    throw InputError(
        "--verify needs --trust-root (whom to trust), or --attestation none to check the signature "
        "only — which proves nothing about who signed");
  }
  const tee::Evidence ev = comm::load_evidence(o.verify);
  std::printf("%s\n", comm::describe(ev).c_str());
  const auto nonce = parse_nonce_hex(o.nonce);
  const tee::VerifyResult r = comm::verify_evidence(ev, ac, std::nullopt, nonce);
  if (!r.ok) throw IntegrityError(o.verify + ": evidence REJECTED: " + r.reason);
  const std::string who =
      !ac.anchor ? "signature valid under the key it names (NO ROOT OF TRUST: proves nothing about who)"
      : ac.anchor->crl_facts()
          ? "the device certificate chains to the trusted root and is not revoked (revocation list " +
                ac.anchor->crl_facts()->describe() + ")"
          : "the device certificate chains to the trusted root; revocation NOT checked "
            "(--no-revocation-check)";
  std::printf("evidence verified: %s; binary and configuration match the policy; %s\n", who.c_str(),
              nonce ? "it answers the given nonce (fresh)"
                    : "freshness NOT checked (give --nonce with the challenge you issued)");
}

void run_attest(const AttestOptions& o) {
  if (o.trust.mode == comm::AttestationMode::Real)
    throw InputError(
        "attest shows the EMULATED vendor's evidence; real evidence: `teetrain gather-evidence` "
        "on the hardware, `teetrain verify-evidence` anywhere");
  TrustOptions trust = o.trust;
  trust.device_identity = expand_rank(trust.device_identity, static_cast<int>(o.rank));
  // Verifying needs only the root: the identity is the prover's business.
  if (!o.verify.empty() && trust.device_identity.empty() && !trust.trust_root.empty()) {
    comm::AttestConfig ac;
    ac.run_config = read_config(o);
    ac.anchor = load_trust(trust, static_cast<int>(o.rank));
    if (!trust.policy.empty()) ac.policy = comm::load_policy(trust.policy);
    return verify_file(o, ac);
  }
  const comm::AttestConfig ac = make_attest_config(trust, static_cast<int>(o.rank), 1, read_config(o));
  if (!o.verify.empty()) return verify_file(o, ac);
  if (!o.write_policy.empty()) {
    const std::string text = comm::policy_text(comm::expected_measurement(ac));
    const tee::UniqueFd fd =
        tee::open_output_file(o.write_policy, "--write-policy", tee::OutputMode::Truncate);
    tee::write_output(fd.get(), text, o.write_policy, "--write-policy");
    std::printf("%swritten to %s (pass it to verifiers with --policy)\n", text.c_str(),
                o.write_policy.c_str());
    return;
  }
  if (ac.mode == comm::AttestationMode::Certified && !ac.identity) {
    throw InputError(
        "attest needs a certified identity: --trust-root vendor/vendor_root.crt --device-identity "
        "vendor/device_0.pem (create them with `teetrain provision --out vendor --devices 1`), or "
        "--attestation none for uncertified evidence");
  }
  // As in a run: a device whose own certificate the trusted root refuses offers no evidence.
  if (ac.anchor && ac.identity) {
    if (const tee::ChainVerdict own = ac.anchor->verify(ac.identity->certificate); !own)
      throw IntegrityError("--device-identity: this device's certificate is refused by the trusted root: " +
                           own.reason);
  }
  const tee::VerifierNonce nonce = parse_nonce_hex(o.nonce).value_or(tee::make_verifier_nonce());
  const tee::Evidence ev = comm::make_local_evidence(ac, o.rank, nonce);
  std::printf("%s", comm::describe(ev).c_str());
  if (ac.anchor) std::printf("  trusted root       %s\n", ac.anchor->describe().c_str());
  if (!o.out.empty()) {
    comm::save_evidence(o.out, ev);
    std::printf("saved to %s (verify with: teetrain attest --verify %s --trust-root ROOT --nonce %s)\n",
                o.out.c_str(), o.out.c_str(), tee::to_hex(nonce).c_str());
  }
}

}  // namespace

void register_attest(CLI::App& app) {
  auto o = std::make_shared<AttestOptions>();
  auto* cmd = app.add_subcommand(
      "attest",
      "Emulated attestation: print this binary's signed evidence field by field (certificate, measurements "
      "of "
      "binary and configuration, nonce, key-exchange key), verify saved evidence (exit 3 if rejected), or "
      "write a verifier policy");
  add_trust_options(cmd, o->trust);
  cmd->add_option("--config", o->config, "Run configuration text that is measured with the binary")
      ->capture_default_str();
  cmd->add_option("--config-file", o->config_file, "Read the run configuration from FILE instead");
  cmd->add_option("--rank", o->rank, "Rank to claim in the evidence ({rank} in --device-identity)")
      ->capture_default_str();
  cmd->add_option(
      "--nonce", o->nonce,
      "The verifier's challenge (64 hex digits): answered when making evidence, required to match "
      "with --verify (default: a fresh random one / not checked)");
  cmd->add_option("--out", o->out, "Save the evidence to FILE");
  cmd->add_option(
      "--verify", o->verify,
      "Verify evidence in FILE against --trust-root and the policy (default: this binary and --config)");
  cmd->add_option("--write-policy", o->write_policy,
                  "Write the policy accepting exactly this binary and --config to FILE (for --policy)");
  cmd->callback([o] { run_attest(*o); });
}

void register_provision(CLI::App& app) {
  auto o = std::make_shared<tee::ProvisionOptions>();
  auto* cmd = app.add_subcommand(
      "provision",
      "Play the GPU vendor (EMULATED): a root certificate, its revocation list and N certified device "
      "identities, for TEE runs with --trust-root and --device-identity. Again on the same DIR: adds devices "
      "and revocations under the same root. Every new revocation list carries the next CRL number and a "
      "nextUpdate --crl-days out");
  cmd->add_option("--out", o->dir, "Vendor directory (created if missing)")->required();
  cmd->add_option("--devices", o->devices,
                  "Device identities 0..N-1 that must exist afterwards (missing ones are issued)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--revoke", o->revoke,
                  "Revoke device I (repeatable): its certificate goes on the next revocation list");
  cmd->add_option("--crl-days", o->crl_days,
                  "A new revocation list is current for this many days (its nextUpdate): verifiers refuse it "
                  "after that, so an older list put back on a disk stops working")
      ->check(CLI::Range(1, tee::kMaxCrlDays))
      ->capture_default_str();
  cmd->add_flag("--renew-crl", o->renew_crl,
                "Issue the next revocation list (number + 1, a fresh nextUpdate) even when no revocation "
                "changed: the vendor's re-issue before the current list expires");
  cmd->callback([o] {
    const tee::ProvisionReport r = tee::provision(*o);  // InputError: exit 2
    std::printf("%s", r.text.c_str());
    for (int i : r.revoked) std::printf("revoked device %d\n", i);
  });
}

}  // namespace tt::cli
