// The model families and their presets, by name: the only place that names concrete models. The
// trainer sees a Model; the CLI, the benchmarks and the tests build one here from a name and overrides,
// and a checkpoint's configuration (model_config_json) builds the same model again.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/model.h"
#include "models/resnet/resnet_stem.h"

namespace tt {

// The families a preset belongs to (a checkpoint's config["model"]["family"] names it).
enum class ModelFamily { Gpt2, Bert, Resnet, Llama };

struct ModelOptions {
  std::string name = "gpt2-mini";
  // Shape overrides (0 = keep the preset's value).
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;
  int vocab = 0;
  int context = 0;
  // Image models: the input shape and classes, filled from the dataset (0 = keep the preset's).
  int image_channels = 0;
  int image_size = 0;
  int num_classes = 0;
  // Image models: the stem (Auto: the preset's rule, the small stem for inputs of 64 px and less).
  // An explicit stem is part of the configuration (model_config_json's "stem"); Auto adds nothing, so
  // the configurations of runs that never chose one stay as they were.
  ResnetStem stem = ResnetStem::Auto;
};

// Throws InputError naming the presets for a name that is none of them.
ModelFamily model_family(const ModelOptions& opts);
// True for image classifiers (the resnet family): they read image data and have no context/vocab.
bool is_image_model(const ModelOptions& opts);
// True for masked language models (the bert family): they train on text windows masked by
// engine/input/mlm_masking.h, whose [MASK] is model_vocab() - 1, and do not generate text.
bool is_masked_lm(const ModelOptions& opts);
std::unique_ptr<Model> make_model(Backend& backend, const ModelOptions& opts);
// The model's resolved configuration (preset plus overrides), for summaries and checkpoints.
nlohmann::json model_config_json(const ModelOptions& opts);
// Rebuilds the options from model_config_json()'s output (a checkpoint's config["model"]).
ModelOptions model_options_from_json(const nlohmann::json& model, const std::string& where);
// The same from a checkpoint's whole configuration; InputError naming `where` when it has no model.
ModelOptions model_options_from_checkpoint(const nlohmann::json& config, const std::string& where);
// The resolved context length (the longest --seq the model accepts) and vocabulary. Image models
// have neither: context is INT_MAX (any --seq passes validation; it is unused) and vocab 0.
int model_context(const ModelOptions& opts);
int model_vocab(const ModelOptions& opts);

// What a training step's memory is made of, from the configuration alone (no model is built, so a
// preset of 70B parameters costs nothing to ask about): its parameters, the largest unit ZeRO-3 gathers
// whole (a transformer block; a ResNet stage) and the activations of one batch of B sequences of T
// tokens (B images for image models: T is unused), as the model's own activation_bytes() counts them.
struct ModelMemory {
  std::size_t params = 0;
  std::size_t unit_params = 0;
  std::size_t units = 0;  // how many units (blocks; ResNet stages)
  std::size_t activation_bytes = 0;
  // Of activation_bytes, attention's materialised (B, NH, T, T) tensors (each layer's, and the one
  // backward scratch): what a fused attention kernel never stores (Note [Fused attention baseline],
  // core/emulated/emulated_gpu.h).
  std::size_t attention_bytes = 0;
};
ModelMemory model_memory(const ModelOptions& opts, int B, int T);

struct PresetRow {
  std::string name;
  std::string shape;
  std::size_t params = 0;
  std::string note;
};
std::vector<PresetRow> list_presets();

}  // namespace tt
