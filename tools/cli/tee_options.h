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
#include "engine/tee_session.h"
#include "tee/aead.h"

namespace tt::cli {

struct TeeOptions {
  std::string mode = "off";  // off | cc | fast
  std::string cipher = "aes-256-gcm";
  uint64_t rekey_mb = 65536;  // rotate link keys after this many MiB sealed per stream
  // Switches: "auto" takes the mode's default (cc: all off; fast: all on).
  std::string pipeline = "auto";        // segment pipelining inside ring chunks
  std::string forward_ag = "auto";      // forward-ciphertext all-gather (owner seals once)
  int crypto_threads = 0;               // 0: mode default (cc 1, fast 2)
  std::string direct_ingress = "auto";  // open batches once (fast) vs the bounce path (cc)
  std::string device_crypto = "auto";   // seal/open gradients on the (emulated) GPU instead of the host
  TrustOptions trust;                   // --attestation, --trust-root, --device-identity, --policy
  std::string key_file = "data-cache/teetrain.key";  // master key for sealed data and checkpoints
  bool allow_plain_data = false;
  std::optional<comm::AdversarySpec> adversary;  // --adversary: an attacker on the links (teaching)
};

// The switches in force after resolving "auto" against the mode.
struct TeeSwitches {
  bool on = false;
  bool cc = false;
  bool pipeline = false;
  bool forward_ag = false;
  int crypto_threads = 1;
  bool direct_ingress = true;
  bool device_crypto = false;  // only where gradients live on a GPU: see resolve_tee
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
};

void add_tee_options(CLI::App* cmd, TeeOptions& o);
// The attestation flags alone (train and bench allreduce add them with the TEE group; attest too).
void add_trust_options(CLI::App* g, TrustOptions& t);
// --adversary SPEC (comm/adversary_spec.h), parsed into `out` (a bad spec is an InputError: exit 2).
void add_adversary_option(CLI::App* g, std::optional<comm::AdversarySpec>& out);
// gpu_gradients: the gradients live on a GPU (train_options.h: gpu_gradients()). Device crypto
// exists only there: with CPU compute the host IS the device, and the switch resolves to off.
TeeSwitches resolve_tee(const TeeOptions& o, bool gpu_gradients = false);
nlohmann::json tee_json(
    const TeeOptions& o,
    bool gpu_gradients = false);  // the resolved mode and switches (summary, config agreement)

}  // namespace tt::cli
