// `teetrain ckpt inspect|verify|export`: look at checkpoints from outside a run. inspect needs no
// key (it shows only clear headers); verify opens every chunk; export writes plaintext safetensors.
#include <cstdio>
#include <optional>

#include "engine/ckpt_tools.h"
#include "engine/key_file.h"
#include "tools/cli/commands.h"

namespace tt::cli {
namespace {

struct CkptOptions {
  std::string path;
  std::string key_file;
  std::string out = "model.safetensors";
};

std::optional<tee::SecretBytes> checkpoint_key(const std::string& key_file) {
  if (key_file.empty()) return std::nullopt;
  const tee::SecretBytes master = load_key_file(
      key_file, [](const std::string& w) { std::fprintf(stderr, "teetrain: warning: %s\n", w.c_str()); });
  return derive_checkpoint_key(master);
}

}  // namespace

void register_ckpt(CLI::App& app) {
  auto o = std::make_shared<CkptOptions>();
  auto* ck = app.add_subcommand("ckpt", "Inspect, verify or export checkpoints (plain or sealed)");
  ck->require_subcommand(1);
  auto add_common = [&](CLI::App* c) {
    c->add_option("path", o->path, "A step directory, or a checkpoint directory (its newest complete step)")
        ->required();
    c->add_option("--key-file", o->key_file, "Master key file (needed for sealed checkpoints)");
  };
  auto* in = ck->add_subcommand("inspect", "Show each file's clear header (no key needed) and the run state");
  add_common(in);
  in->callback([o] {
    const auto key = checkpoint_key(o->key_file);
    std::printf("%s", inspect_checkpoint(o->path, key ? &*key : nullptr).c_str());
  });
  auto* ve = ck->add_subcommand(
      "verify", "Open every chunk of every file and check the parameter digest (exit 3 on failure)");
  add_common(ve);
  ve->callback([o] {
    const auto key = checkpoint_key(o->key_file);
    std::printf("%s", verify_checkpoint(o->path, key ? &*key : nullptr).text.c_str());
  });
  auto* ex = ck->add_subcommand("export",
                                "Write the model as plaintext safetensors (loadable by PyTorch/safetensors)");
  add_common(ex);
  ex->add_option("--out", o->out, "Output file")->capture_default_str();
  ex->callback([o] {
    const auto key = checkpoint_key(o->key_file);
    std::printf("%s\n", export_safetensors(o->path, key ? &*key : nullptr, o->out).text.c_str());
  });
}

}  // namespace tt::cli
