// `teetrain keygen` and `teetrain seal-data`: the data owner's side of TEE mode. A master key file
// (32 random bytes, mode 0600) seals datasets and checkpoints through purpose keys derived by HKDF;
// a rank receives the dataset key only after attestation.
#include <cstdio>

#include "data/sealed_tokens.h"
#include "engine/core/error.h"
#include "engine/key_file.h"
#include "tee/aead.h"
#include "tools/cli/commands.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct KeygenOptions {
  std::string out = "data-cache/teetrain.key";
  bool force = false;
};

struct SealDataOptions {
  std::string data = "data-cache/fortunes";
  std::string out = "data-cache/sealed";
  std::string key_file = "data-cache/teetrain.key";
  std::string cipher = "aes-256-gcm";
  uint32_t chunk_kb = 64;  // small chunks: a random window opens little more than itself
};

void warn(const std::string& w) { std::fprintf(stderr, "teetrain: warning: %s\n", w.c_str()); }

void run_seal_data(const SealDataOptions& o) {
  const auto cipher = tee::parse_cipher(o.cipher);
  if (!cipher) throw InputError("--cipher " + o.cipher + ": unknown");
  const tee::SecretBytes master = load_key_file(o.key_file, warn);
  const auto inputs = list_token_shards(o.data);
  const auto infos = seal_token_shards(inputs, o.out, derive_dataset_key(master), *cipher, o.chunk_kb * 1024);
  for (const auto& i : infos) {
    std::printf("sealed %s -> %s (%llu tokens, %llu chunks)\n", i.input.c_str(), i.output.c_str(),
                static_cast<unsigned long long>(i.tokens), static_cast<unsigned long long>(i.chunks));
  }
  std::printf("train on it with: teetrain train --tee fast --key-file %s --data %s/<name>\n", o.key_file.c_str(),
              o.out.c_str());
}

}  // namespace

void register_keys(CLI::App& app) {
  auto k = std::make_shared<KeygenOptions>();
  auto* kg = app.add_subcommand("keygen", "Create a master key file for sealed datasets and checkpoints (32 bytes, 0600)");
  kg->add_option("--out", k->out, "Key file to create")->capture_default_str();
  kg->add_flag("--force", k->force, "Overwrite an existing key file (everything sealed with it becomes unreadable)");
  kg->callback([k] {
    const std::string fp = create_key_file(k->out, k->force);
    const tee::SecretBytes master = load_key_file(k->out, warn);
    std::printf("created %s (fingerprint %s; dataset key %s, checkpoint key %s). Keep it secret; it is never printed.\n",
                k->out.c_str(), fp.c_str(), derive_dataset_key(master).fingerprint().c_str(),
                derive_checkpoint_key(master).fingerprint().c_str());
  });

  auto s = std::make_shared<SealDataOptions>();
  auto* sd = app.add_subcommand("seal-data", "Seal token shards at rest (sealed-file format) for TEE-mode training");
  sd->add_option("--data", s->data, "Token shards to seal: a prefix, directory, file or glob (all splits)")->capture_default_str();
  sd->add_option("--out", s->out, "Output directory (files keep their names plus .sealed)")->capture_default_str();
  sd->add_option("--key-file", s->key_file, "Master key file (create with `teetrain keygen`)")->capture_default_str();
  sd->add_option("--cipher", s->cipher, "AEAD cipher")
      ->check(CLI::IsMember({"aes-256-gcm", "aes-128-gcm", "chacha20-poly1305"}))
      ->capture_default_str();
  sd->add_option("--chunk-kb", s->chunk_kb, "Sealed chunk size in KiB")->check(positive())->capture_default_str();
  sd->callback([s] { run_seal_data(*s); });
}

}  // namespace tt::cli
