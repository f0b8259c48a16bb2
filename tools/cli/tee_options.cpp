#include "tools/cli/tee_options.h"

#include "engine/core/error.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

bool resolve(const std::string& v, bool mode_default) {
  return v == "auto" ? mode_default : v == "on";
}

}  // namespace

void add_tee_options(CLI::App* cmd, TeeOptions& o) {
  auto* g = cmd->add_option_group("TEE mode (confidential computing emulation)");
  g->add_option(
       "--tee", o.mode,
       "off: plaintext; cc: H100 CC as measured by Lee et al. (whole-chunk seal, per-hop re-seal, bounce "
       "ingress); fast: pipelined segments, forward-ciphertext all-gather, crypto threads, direct ingress")
      ->check(CLI::IsMember({"off", "cc", "fast"}))
      ->capture_default_str();
  g->add_option("--cipher", o.cipher, "AEAD cipher")
      ->check(CLI::IsMember({"aes-256-gcm", "aes-128-gcm", "chacha20-poly1305"}))
      ->capture_default_str();
  g->add_option("--rekey-mb", o.rekey_mb, "Rotate each key after this many MiB (HKDF ratchet)")
      ->check(positive())
      ->capture_default_str();
  const auto onoff = CLI::IsMember({"auto", "on", "off"});
  g->add_option("--tee-pipeline", o.pipeline,
                "Cut ring chunks into segments that seal/send/open in a pipeline")
      ->check(onoff)
      ->capture_default_str();
  g->add_option("--tee-forward-ag", o.forward_ag,
                "All-gather forwards the owner's ciphertext instead of re-sealing per hop")
      ->check(onoff)
      ->capture_default_str();
  g->add_option("--crypto-threads", o.crypto_threads,
                "Threads sealing/opening segments in parallel (0 = mode default)")
      ->check(non_negative())
      ->capture_default_str();
  g->add_option("--tee-direct-ingress", o.direct_ingress,
                "Open each batch once with the released dataset key (off: bounce path)")
      ->check(onoff)
      ->capture_default_str();
  g->add_option(
       "--tee-device-crypto", o.device_crypto,
       "Seal/open gradients where they live, on the GPU: --device cuda runs our CUDA AES-GCM in the device "
       "ring; --compute emulate waits at the GPU's AES-GCM rate (--gpu-aead-gbps). off: the host seals "
       "them, as H100 CC's bounce buffers. No effect on CPU compute")
      ->check(onoff)
      ->capture_default_str();
  g->add_option("--device-key", o.device_key,
                "This rank's Ed25519 device key (PEM); default: a fresh key per run");
  g->add_option("--allow-list", o.allow_list,
                "File of device public keys (hex, one per line) peers must present");
  g->add_option("--key-file", o.key_file,
                "Master key for sealed data and checkpoints (create with `teetrain keygen`)")
      ->capture_default_str();
  g->add_flag("--allow-plain-data", o.allow_plain_data, "Accept plaintext token shards in TEE mode");
}

TeeSwitches resolve_tee(const TeeOptions& o, bool gpu_gradients) {
  TeeSwitches s;
  s.on = o.mode != "off";
  s.cc = o.mode == "cc";
  const bool fast = o.mode == "fast";
  s.pipeline = s.on && resolve(o.pipeline, fast);
  s.forward_ag = s.on && resolve(o.forward_ag, fast);
  s.crypto_threads = o.crypto_threads > 0 ? o.crypto_threads : (fast ? 2 : 1);
  s.direct_ingress = !s.on || resolve(o.direct_ingress, fast);
  s.device_crypto = s.on && gpu_gradients && resolve(o.device_crypto, fast);
  const auto c = tee::parse_cipher(o.cipher);
  if (!c)
    throw InputError("--cipher " + o.cipher + ": unknown; use aes-256-gcm, aes-128-gcm or chacha20-poly1305");
  s.cipher = *c;
  return s;
}

nlohmann::json tee_json(const TeeOptions& o, bool gpu_gradients) {
  const TeeSwitches s = resolve_tee(o, gpu_gradients);
  if (!s.on) return {{"mode", "off"}};
  return {{"mode", o.mode},
          {"cipher", o.cipher},
          {"rekey_mb", o.rekey_mb},
          {"pipeline", s.pipeline},
          {"forward_ag", s.forward_ag},
          {"crypto_threads", s.crypto_threads},
          {"direct_ingress", s.direct_ingress},
          {"device_crypto", s.device_crypto},
          {"allow_plain_data", o.allow_plain_data}};
}

}  // namespace tt::cli
