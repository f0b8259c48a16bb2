// `teetrain ckpt inspect|verify|export`: look at checkpoints from outside a run. inspect needs no
// key (it shows only clear headers); verify runs resume's checks (manifest, digests, every chunk,
// chain) and, with --key-file, the key owner's freshness record; export writes plaintext safetensors.
#include <cstdio>
#include <optional>

#include "base/warning.h"
#include "engine/checkpoint/ckpt_tools.h"
#include "engine/checkpoint/freshness.h"
#include "engine/keys/key_file.h"
#include "tools/cli/commands.h"

namespace tt::cli {
namespace {

struct CkptOptions {
  std::string path;
  std::string key_file;
  std::string out = "model.safetensors";
};

// What --key-file gives: the checkpoint key, and the freshness record kept beside the key file.
struct CkptKeys {
  std::optional<tee::CheckpointKey> checkpoint;
  std::optional<FreshnessRecord> freshness;
  const tee::CheckpointKey* key() const { return checkpoint ? &*checkpoint : nullptr; }
  const FreshnessRecord* record() const { return freshness ? &*freshness : nullptr; }
};

CkptKeys keys_of(const std::string& key_file) {
  CkptKeys k;
  if (key_file.empty()) return k;
  const tee::MasterKey master = load_key_file(key_file, print_warning);
  k.checkpoint = derive_checkpoint_key(master);
  k.freshness.emplace(freshness_record_path(key_file), master);
  return k;
}

}  // namespace

void register_ckpt(CLI::App& app) {
  auto o = std::make_shared<CkptOptions>();
  auto* ck = app.add_subcommand("ckpt", "Inspect, verify or export checkpoints (plain or sealed)");
  ck->require_subcommand(1);
  auto add_common = [&](CLI::App* c) {
    c->add_option("path", o->path, "A step directory, or a checkpoint directory (its newest complete step)")
        ->required();
    c->add_option("--key-file", o->key_file,
                  "Master key file (needed for sealed checkpoints; verify and export also check its "
                  "freshness record, FILE.freshness, against rollback)");
  };
  auto* in = ck->add_subcommand("inspect", "Show each file's clear header (no key needed) and the run state");
  add_common(in);
  in->callback([o] {
    const CkptKeys k = keys_of(o->key_file);
    std::printf("%s", inspect_checkpoint(o->path, k.key()).c_str());
  });
  auto* ve = ck->add_subcommand(
      "verify",
      "Run resume's checks: manifest, sizes and digests, every chunk, parameter digest, chain, and the key "
      "file's freshness record (exit 3 on failure)");
  add_common(ve);
  ve->callback([o] {
    const CkptKeys k = keys_of(o->key_file);
    std::printf("%s", verify_checkpoint(o->path, k.key(), k.record()).text.c_str());
  });
  auto* ex = ck->add_subcommand("export",
                                "Write the model as plaintext safetensors (loadable by PyTorch/safetensors)");
  add_common(ex);
  ex->add_option("--out", o->out, "Output file")->capture_default_str();
  ex->callback([o] {
    const CkptKeys k = keys_of(o->key_file);
    std::printf("%s\n", export_safetensors(o->path, k.key(), o->out, k.record()).text.c_str());
  });
}

}  // namespace tt::cli
