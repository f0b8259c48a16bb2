#include "tools/cli/model_registry.h"

#include <climits>

#include "engine/core/error.h"
#include "models/gpt2/gpt2.h"
#include "models/resnet/resnet.h"
#include "tools/cli/validators.h"

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

// The preset's architecture with the dataset's input shape and classes.
ResnetConfig resnet_config(const ModelOptions& o) {
  ResnetConfig c = ResnetConfig::preset(o.name);
  if (o.image_channels > 0) c.in_channels = o.image_channels;
  if (o.image_size > 0) c.image_size = o.image_size;
  if (o.num_classes > 0) c.num_classes = o.num_classes;
  c.validate();
  return c;
}

bool is_gpt2(const std::string& name) {
  return name.rfind("gpt2", 0) == 0;
}

void require_known(const ModelOptions& o) {
  if (!is_gpt2(o.name) && !ResnetConfig::is_preset(o.name)) {
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
  cmd->add_option("--vocab", opts.vocab,
                  "Override the vocabulary size (256 for byte-level text, 50257 for GPT-2 BPE)")
      ->check(positive());
  cmd->add_option("--context", opts.context, "Override the context length (max --seq)")->check(positive());
}

bool is_image_model(const ModelOptions& opts) {
  return ResnetConfig::is_preset(opts.name);
}

std::unique_ptr<Model> make_model(Backend& backend, const ModelOptions& opts) {
  require_known(opts);
  if (is_image_model(opts)) return std::make_unique<Resnet>(backend, resnet_config(opts), opts.name);
  return std::make_unique<Gpt2>(backend, gpt2_config(opts), opts.name);
}

nlohmann::json model_config_json(const ModelOptions& opts) {
  require_known(opts);
  if (is_image_model(opts)) {
    const ResnetConfig c = resnet_config(opts);
    return {{"name", opts.name},          {"family", "resnet"},           {"image_channels", c.in_channels},
            {"image_size", c.image_size}, {"num_classes", c.num_classes}, {"shape", c.describe()},
            {"params", c.num_params()}};
  }
  const Gpt2Config c = gpt2_config(opts);
  return {{"name", opts.name},  {"family", "gpt2"},      {"n_layer", c.n_layer}, {"n_head", c.n_head},
          {"n_embd", c.n_embd}, {"vocab", c.vocab_size}, {"context", c.context}, {"params", c.num_params()}};
}

ModelOptions model_options_from_json(const nlohmann::json& m, const std::string& where) {
  try {
    ModelOptions o;
    o.name = m.at("name").get<std::string>();
    if (m.value("family", "gpt2") == "resnet") {
      o.image_channels = m.at("image_channels").get<int>();
      o.image_size = m.at("image_size").get<int>();
      o.num_classes = m.at("num_classes").get<int>();
    } else {
      o.n_layer = m.at("n_layer").get<int>();
      o.n_head = m.at("n_head").get<int>();
      o.n_embd = m.at("n_embd").get<int>();
      o.vocab = m.at("vocab").get<int>();
      o.context = m.at("context").get<int>();
    }
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": malformed model configuration (" + e.what() + ")");
  }
}

int model_context(const ModelOptions& opts) {
  require_known(opts);
  if (is_image_model(opts)) return INT_MAX;
  return gpt2_config(opts).context;
}

int model_vocab(const ModelOptions& opts) {
  require_known(opts);
  if (is_image_model(opts)) return 0;
  return gpt2_config(opts).vocab_size;
}

std::vector<PresetRow> list_presets() {
  std::vector<PresetRow> rows;
  for (const Gpt2Preset& p : Gpt2Config::presets())
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  for (const ResnetPreset& p : ResnetConfig::presets()) {
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  }
  return rows;
}

}  // namespace tt::cli
