// `teetrain attestation-policy`: a verifier's policy of real measurements (tee/evidence/evidence_policy.h,
// Note [Evidence policy]) written from evidence the operator trusts, for `verify-evidence --policy`.
#include <cstdio>

#include "base/error.h"
#include "tee/evidence/evidence_policy.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"
#include "tools/cli/commands.h"

namespace tt::cli {
namespace {

namespace ev = tee::evidence;

struct PolicyOptions {
  std::vector<std::string> from;
  std::vector<std::string> rims;
  std::string out;
};

void run_attestation_policy(const PolicyOptions& o) {
  std::vector<ev::Rim> rims;
  for (const std::string& rim : o.rims) rims.push_back(ev::load_rim(rim));
  ev::EvidencePolicy policy;
  for (const std::string& file : o.from)
    for (const ev::VerifiedMeasurements& m : ev::read_measurements(file, rims)) {
      ev::add_to_policy(policy, m);
      std::printf("from          %s\n", m.source.c_str());
    }
  const std::string text =
      "# Written by teetrain attestation-policy from evidence the operator trusts; edit freely\n"
      "# (one field per line; repeat a field to allow several values: docs/reference/"
      "attestation-policy.md)\n" +
      ev::write_policy(policy);
  tee::write_file_atomic(o.out, tee::bytes_of(text), 0644, "--out");
  std::printf("policy        %s (sha256 %s), %zu field(s); debug refused\n",
              tee::printable_path(o.out).c_str(), tee::to_hex(ev::policy_digest(policy)).c_str(),
              policy.allowed.size());
  std::printf(
      "NOT verified  the evidence's signatures: verify each file with teetrain verify-evidence first\n");
}

}  // namespace

void register_attestation_policy(CLI::App& app) {
  auto o = std::make_shared<PolicyOptions>();
  auto* cmd = app.add_subcommand(
      "attestation-policy",
      "Write a verifier's policy of real measurements (TDX MRTD, RTMRs, minimum TEE_TCB_SVN; SEV-SNP "
      "MEASUREMENT, minimum REPORTED_TCB; GPU driver and VBIOS versions, RIM ids; debug refused) from "
      "evidence you trust, for verify-evidence --policy. A text file, one field per line, to edit");
  cmd->add_option(
         "--from", o->from,
         "Evidence you trust (repeatable): a TDX quote, an SEV-SNP report, or NVIDIA SDK JSON; read, "
         "not verified: verify it with verify-evidence first")
      ->required();
  cmd->add_option("--rim", o->rims,
                  "An NVIDIA RIM the GPUs were checked against (repeatable): its tag id is allowed");
  cmd->add_option("--out", o->out, "Where to write the policy")->required();
  cmd->callback([o] { run_attestation_policy(*o); });
}

}  // namespace tt::cli
