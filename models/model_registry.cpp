#include "models/model_registry.h"

#include <algorithm>
#include <climits>

#include "base/error.h"
#include "models/bert/bert.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "models/resnet/resnet.h"

namespace tt {
namespace {

// A chosen stem's name in a configuration (bench step's --stem spellings).
struct StemName {
  ResnetStem stem;
  const char* name;
};
constexpr StemName kStemNames[] = {{ResnetStem::ImageNet, "imagenet"}, {ResnetStem::Small, "cifar"}};

ResnetStem stem_named(const std::string& name, const std::string& where) {
  for (const StemName& s : kStemNames)
    if (name == s.name) return s.stem;
  throw InputError(where + ": malformed model configuration (unknown stem '" + name + "')");
}

// A token model's preset with the shape overrides (0 keeps the preset's value), validated.
template <typename Config>
Config with_overrides(Config c, const ModelOptions& o) {
  if (o.n_layer > 0) c.n_layer = o.n_layer;
  if (o.n_head > 0) c.n_head = o.n_head;
  if (o.n_embd > 0) c.n_embd = o.n_embd;
  if (o.vocab > 0) c.vocab_size = o.vocab;
  if (o.context > 0) c.context = o.context;
  c.validate();
  return c;
}

Gpt2Config gpt2_config(const ModelOptions& o) {
  return with_overrides(Gpt2Config::preset(o.name), o);
}

BertConfig bert_config(const ModelOptions& o) {
  return with_overrides(BertConfig::preset(o.name), o);
}

LlamaConfig llama_config(const ModelOptions& o) {
  return with_overrides(LlamaConfig::preset(o.name), o);
}

// The preset's architecture with the dataset's input shape and classes.
ResnetConfig resnet_config(const ModelOptions& o) {
  ResnetConfig c = ResnetConfig::preset(o.name);
  if (o.image_channels > 0) c.in_channels = o.image_channels;
  if (o.image_size > 0) c.image_size = o.image_size;
  if (o.num_classes > 0) c.num_classes = o.num_classes;
  c.stem = o.stem;
  c.validate();
  return c;
}

// A name is a family's only when it is one of its presets: a near miss ('gpt2-smal') is then refused
// by model_family() with every family's presets, not with one family's.
bool is_gpt2_preset(const std::string& name) {
  for (const Gpt2Preset& p : Gpt2Config::presets())
    if (p.name == name) return true;
  return false;
}

}  // namespace

ModelFamily model_family(const ModelOptions& o) {
  if (is_gpt2_preset(o.name)) return ModelFamily::Gpt2;
  if (BertConfig::is_preset(o.name)) return ModelFamily::Bert;
  if (ResnetConfig::is_preset(o.name)) return ModelFamily::Resnet;
  if (LlamaConfig::is_preset(o.name)) return ModelFamily::Llama;
  std::string names;
  for (const auto& r : list_presets()) names += (names.empty() ? "" : ", ") + r.name;
  throw InputError("unknown model '" + o.name + "': choose one of " + names + " (see `teetrain models`)");
}

bool is_image_model(const ModelOptions& opts) {
  return ResnetConfig::is_preset(opts.name);  // no throw: an unknown name is reported where it is built
}

bool is_masked_lm(const ModelOptions& opts) {
  return BertConfig::is_preset(opts.name);
}

std::unique_ptr<Model> make_model(Backend& backend, const ModelOptions& opts) {
  switch (model_family(opts)) {
    case ModelFamily::Resnet:
      return std::make_unique<Resnet>(backend, resnet_config(opts), opts.name);
    case ModelFamily::Bert:
      return std::make_unique<Bert>(backend, bert_config(opts), opts.name);
    case ModelFamily::Llama:
      return std::make_unique<Llama>(backend, llama_config(opts), opts.name);
    case ModelFamily::Gpt2:
      break;
  }
  return std::make_unique<Gpt2>(backend, gpt2_config(opts), opts.name);
}

nlohmann::json model_config_json(const ModelOptions& opts) {
  if (model_family(opts) == ModelFamily::Resnet) {
    const ResnetConfig c = resnet_config(opts);
    nlohmann::json j{
        {"name", opts.name},          {"family", "resnet"},           {"image_channels", c.in_channels},
        {"image_size", c.image_size}, {"num_classes", c.num_classes}, {"shape", c.describe()},
        {"params", c.num_params()}};
    if (opts.stem != ResnetStem::Auto) j["stem"] = kStemNames[c.small_stem() ? 1 : 0].name;
    return j;
  }
  if (model_family(opts) == ModelFamily::Bert) {
    const BertConfig c = bert_config(opts);
    return {{"name", opts.name},    {"family", "bert"},        {"n_layer", c.n_layer},
            {"n_head", c.n_head},   {"n_embd", c.n_embd},      {"vocab", c.vocab_size},
            {"context", c.context}, {"params", c.num_params()}};
  }
  if (model_family(opts) == ModelFamily::Llama) {
    const LlamaConfig c = llama_config(opts);
    return {{"name", opts.name},    {"family", "llama"},       {"n_layer", c.n_layer},
            {"n_head", c.n_head},   {"n_embd", c.n_embd},      {"vocab", c.vocab_size},
            {"context", c.context}, {"params", c.num_params()}};
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
      if (m.contains("stem")) o.stem = stem_named(m["stem"].get<std::string>(), where);
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

ModelOptions model_options_from_checkpoint(const nlohmann::json& config, const std::string& where) {
  if (!config.contains("model")) throw InputError(where + ": checkpoint has no model configuration");
  return model_options_from_json(config["model"], where);
}

int model_context(const ModelOptions& opts) {
  switch (model_family(opts)) {
    case ModelFamily::Resnet:
      return INT_MAX;
    case ModelFamily::Bert:
      return bert_config(opts).context;
    case ModelFamily::Llama:
      return llama_config(opts).context;
    case ModelFamily::Gpt2:
      break;
  }
  return gpt2_config(opts).context;
}

int model_vocab(const ModelOptions& opts) {
  switch (model_family(opts)) {
    case ModelFamily::Resnet:
      return 0;
    case ModelFamily::Bert:
      return bert_config(opts).vocab_size;
    case ModelFamily::Llama:
      return llama_config(opts).vocab_size;
    case ModelFamily::Gpt2:
      break;
  }
  return gpt2_config(opts).vocab_size;
}

namespace {
// Every layer's (B, NH, T, T) attention tensor and backward's one scratch of that size, as the token
// models carve them (models/common/token_model.h: TransformerGrads::datt).
std::size_t attention_bytes(int n_layer, int n_head, int B, int T) {
  const auto z = [](int v) { return static_cast<std::size_t>(std::max(v, 0)); };
  return (z(n_layer) + 1) * z(B) * z(n_head) * z(T) * z(T) * sizeof(float);
}
}  // namespace

ModelMemory model_memory(const ModelOptions& opts, int B, int T) {
  switch (model_family(opts)) {
    case ModelFamily::Resnet: {
      const ResnetConfig c = resnet_config(opts);
      return {.params = c.num_params(),
              .unit_params = c.max_stage_params(),
              .units = c.layers.size(),
              .activation_bytes = Resnet::activation_bytes_for(c, B)};
    }
    case ModelFamily::Bert: {
      const BertConfig c = bert_config(opts);
      return {.params = c.num_params(),
              .unit_params = c.block_params(),
              .units = static_cast<std::size_t>(c.n_layer),
              .activation_bytes = Bert::activation_bytes_for(c, B, T),
              .attention_bytes = attention_bytes(c.n_layer, c.n_head, B, T)};
    }
    case ModelFamily::Llama: {
      const LlamaConfig c = llama_config(opts);
      return {.params = c.num_params(),
              .unit_params = c.block_params(),
              .units = static_cast<std::size_t>(c.n_layer),
              .activation_bytes = Llama::activation_bytes_for(c, B, T),
              .attention_bytes = attention_bytes(c.n_layer, c.n_head, B, T)};
    }
    case ModelFamily::Gpt2:
      break;
  }
  const Gpt2Config c = gpt2_config(opts);
  return {.params = c.num_params(),
          .unit_params = c.block_params(),
          .units = static_cast<std::size_t>(c.n_layer),
          .activation_bytes = Gpt2::activation_bytes_for(c, B, T),
          .attention_bytes = attention_bytes(c.n_layer, c.n_head, B, T)};
}

std::vector<PresetRow> list_presets() {
  std::vector<PresetRow> rows;
  for (const Gpt2Preset& p : Gpt2Config::presets())
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  for (const BertPreset& p : BertConfig::presets())
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  for (const LlamaPreset& p : LlamaConfig::presets())
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  for (const ResnetPreset& p : ResnetConfig::presets()) {
    rows.push_back({p.name, p.config.describe(), p.config.num_params(), p.note});
  }
  return rows;
}

}  // namespace tt
