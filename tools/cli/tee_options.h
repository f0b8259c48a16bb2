// TEE-mode flags of `teetrain train` and their resolution into switches. `cc` emulates H100
// confidential computing as Lee et al. measured it; `fast` is our TEE-aware design. Every
// optimization of fast is also a switch of its own so an ablation can add them one at a time.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "comm/adversary_spec.h"
#include "engine/run_plan.h"
#include "engine/tee_session.h"
#include "tee/aead.h"

namespace tt::cli {

// The TEE flags of `train` and `bench allreduce`: the typed settings the engine resolves
// (engine/run_plan.h), plus who is trusted, where the key file is, and the teaching adversary.
struct TeeOptions {
  TeeSettings settings;  // --tee, --cipher, --rekey-mb and fast's switches
  TrustOptions trust;    // --attestation, --trust-root, --device-identity, --policy
  std::string key_file = "data-cache/teetrain.key";  // master key for sealed data and checkpoints
  bool allow_plain_data = false;
  std::optional<comm::AdversarySpec> adversary;  // --adversary: an attacker on the links (teaching)
};

void add_tee_options(CLI::App* cmd, TeeOptions& o);
// The attestation flags alone (train and bench allreduce add them with the TEE group; attest too).
void add_trust_options(CLI::App* g, TrustOptions& t);
// --adversary SPEC (comm/adversary_spec.h), parsed into `out` (a bad spec is an InputError: exit 2).
void add_adversary_option(CLI::App* g, std::optional<comm::AdversarySpec>& out);
nlohmann::json tee_json(
    const TeeOptions& o,
    bool gpu_gradients = false);  // the resolved mode and switches (summary, config agreement)

}  // namespace tt::cli
