#include "tools/cli/model_flags.h"

#include "tools/cli/validators.h"

namespace tt::cli {

void add_model_options(CLI::App* cmd, ModelOptions& opts) {
  cmd->add_option("--model", opts.name,
                  "Model preset (see `teetrain models`): gpt2* and llama-*, smollm2-* (next-token LM), bert* "
                  "(masked LM), resnet* (images)")
      ->capture_default_str();
  cmd->add_option("--n-layer", opts.n_layer, "Override the preset's number of layers")->check(positive());
  cmd->add_option("--n-head", opts.n_head, "Override the number of attention heads")->check(positive());
  cmd->add_option("--n-embd", opts.n_embd, "Override the embedding width")->check(positive());
  cmd->add_option("--vocab", opts.vocab,
                  "Override the vocabulary size (256 for byte-level text, 50257 for GPT-2 BPE; BERT "
                  "keeps its last id for [MASK]: 257 for byte-level text)")
      ->check(positive());
  cmd->add_option("--context", opts.context, "Override the context length (max --seq)")->check(positive());
}

}  // namespace tt::cli
