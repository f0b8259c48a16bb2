// `teetrain attest`: the emulated attestation, for teaching. It prints (and optionally saves) this
// binary's evidence for a run configuration, or verifies saved evidence against an expected one.
#include <cstdio>

#include "comm/attest_evidence.h"
#include "engine/core/error.h"
#include "tee/attestation.h"
#include "tools/cli/commands.h"

namespace tt::cli {
namespace {

struct AttestOptions {
  std::string config = "{}";
  std::string config_file;
  std::string device_key;
  std::string allow_list;
  std::string out;
  std::string verify;
  uint32_t rank = 0;
};

std::string read_config(const AttestOptions& o) {
  if (o.config_file.empty()) return o.config;
  std::FILE* f = std::fopen(o.config_file.c_str(), "rb");
  if (f == nullptr) throw InputError("--config-file " + o.config_file + ": cannot open");
  std::string s;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

void run_attest(const AttestOptions& o) {
  comm::AttestConfig ac;
  ac.run_config = read_config(o);
  ac.device_key_pem = o.device_key;
  if (!o.allow_list.empty()) ac.allowed_device_keys = comm::load_allow_list(o.allow_list);
  if (!o.verify.empty()) {
    const tee::Evidence ev = comm::load_evidence(o.verify);
    std::printf("%s\n", comm::describe(ev).c_str());
    const tee::VerifyResult r = comm::verify_evidence(ev, ac);
    if (!r.ok) throw tee::IntegrityError(o.verify + ": evidence REJECTED: " + r.reason);
    std::printf("evidence verified: measurement matches this binary and configuration\n");
    return;
  }
  const tee::Evidence ev = comm::make_local_evidence(ac, o.rank, tee::make_verifier_nonce());
  std::printf("%s\n", comm::describe(ev).c_str());
  if (!o.out.empty()) {
    comm::save_evidence(o.out, ev);
    std::printf("saved to %s (verify with: teetrain attest --verify %s --config '...')\n", o.out.c_str(),
                o.out.c_str());
  }
}

}  // namespace

void register_attest(CLI::App& app) {
  auto o = std::make_shared<AttestOptions>();
  auto* cmd = app.add_subcommand("attest",
                                 "Emulated attestation: print this binary's signed evidence (measurement = "
                                 "SHA-256 of the binary and a run "
                                 "configuration), or verify saved evidence");
  cmd->add_option("--config", o->config, "Run configuration text that is measured with the binary")
      ->capture_default_str();
  cmd->add_option("--config-file", o->config_file, "Read the run configuration from FILE instead");
  cmd->add_option("--device-key", o->device_key, "Ed25519 device key (PEM); default: a fresh key");
  cmd->add_option("--allow-list", o->allow_list,
                  "With --verify: device public keys (hex, one per line) to accept");
  cmd->add_option("--rank", o->rank, "Rank to claim in the evidence")->capture_default_str();
  cmd->add_option("--out", o->out, "Save the evidence (204 bytes) to FILE");
  cmd->add_option("--verify", o->verify,
                  "Verify evidence in FILE against this binary and --config (exit 3 if rejected)");
  cmd->callback([o] { run_attest(*o); });
}

}  // namespace tt::cli
