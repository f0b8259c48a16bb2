#include "tools/cli/model_registry.h"
#include "tools/cli/validators.h"

#include "engine/core/error.h"
#include "models/gpt2/gpt2.h"

namespace tt::cli {
namespace {

Gpt2Config gpt2_config(const ModelOptions& o) {
  Gpt2Config c = Gpt2Config::preset(o.name);
  if (o.n_layer > 0) c.n_layer = o.n_layer;
  if (o.n_head > 0) c.n_head = o.n_head;
  if (o.n_embd > 0) c.n_embd = o.n_embd;
  if (o.vocab > 0) c.vocab_size = o.vocab;
  if (o.context > 0) c.context = o.context;
  c.validate();
  return c;
}

bool is_gpt2(const std::string& name) { return name.rfind("gpt2", 0) == 0; }

void require_known(const ModelOptions& o) {
  if (!is_gpt2(o.name)) {
    std::string names;
    for (const auto& r : list_presets()) names += (names.empty() ? "" : ", ") + r.name;
    throw InputError("unknown model '" + o.name + "': choose one of " + names + " (see `teetrain models`)");
  }
}

}  // namespace

void add_model_options(CLI::App* cmd, ModelOptions& opts) {
  cmd->add_option("--model", opts.name, "Model preset (see `teetrain models`)")->capture_default_str();
  cmd->add_option("--n-layer", opts.n_layer, "Override the preset's number of layers")->check(positive());
  cmd->add_option("--n-head", opts.n_head, "Override the number of attention heads")->check(positive());
  cmd->add_option("--n-embd", opts.n_embd, "Override the embedding width")->check(positive());
  cmd->add_option("--vocab", opts.vocab, "Override the vocabulary size (256 for byte-level text, 50257 for GPT-2 BPE)")
      ->check(positive());
  cmd->add_option("--context", opts.context, "Override the context length (max --seq)")->check(positive());
}

std::unique_ptr<Model> make_model(Backend& backend, const ModelOptions& opts) {
  require_known(opts);
  return std::make_unique<Gpt2>(backend, gpt2_config(opts), opts.name);
}

nlohmann::json model_config_json(const ModelOptions& opts) {
  require_known(opts);
  const Gpt2Config c = gpt2_config(opts);
  return {{"name", opts.name},  {"family", "gpt2"},      {"n_layer", c.n_layer},         {"n_head", c.n_head},
          {"n_embd", c.n_embd}, {"vocab", c.vocab_size}, {"context", c.context}, {"params", c.num_params()}};
}

int model_context(const ModelOptions& opts) {
  require_known(opts);
  return gpt2_config(opts).context;
}

int model_vocab(const ModelOptions& opts) {
  require_known(opts);
  return gpt2_config(opts).vocab_size;
}

std::vector<PresetRow> list_presets() {
  std::vector<PresetRow> rows;
  for (const Gpt2Preset& p : Gpt2Config::presets()) rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  return rows;
}

}  // namespace tt::cli
