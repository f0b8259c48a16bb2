// `teetrain prepare-text`: text files -> byte-level llm.c-format train/val token shards.
#include <cstdio>

#include "data/text_prepare.h"
#include "tools/cli/commands.h"

namespace tt::cli {

void register_prepare_text(CLI::App& app) {
  auto opts = std::make_shared<PrepareTextOptions>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand(
      "prepare-text",
      "Turn text files (default: the Debian fortunes corpus) into byte-level train/val token shards");
  cmd->add_option("inputs", *inputs,
                  "Text files or directories (default: " + std::string(kFortunesDir) + ")");
  cmd->add_option("--out", opts->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--name", opts->name, "Output name prefix: <out>/<name>_train.bin, <name>_val.bin")
      ->capture_default_str();
  cmd->add_option("--val-every", opts->val_every, "Every N-th document goes to the validation split")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  cmd->callback([opts, inputs] {
    for (const auto& s : *inputs) opts->inputs.emplace_back(s);
    const PrepareTextStats st = prepare_text(*opts);
    std::printf("prepared %llu documents from %zu files: train %llu tokens -> %s, val %llu tokens -> %s\n",
                static_cast<unsigned long long>(st.documents), st.sources.size(),
                static_cast<unsigned long long>(st.train_tokens), st.train_path.c_str(),
                static_cast<unsigned long long>(st.val_tokens), st.val_path.c_str());
  });
}

}  // namespace tt::cli
