// models/model_registry.h: names to families, every preset builds, the unknown name is an InputError
// that lists the presets, and a checkpoint's model configuration builds the same model again.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "models/model_registry.h"

namespace tt {
namespace {

ModelOptions named(const std::string& name) {
  ModelOptions o;
  o.name = name;
  return o;
}

TEST(ModelRegistry, FamiliesByName) {
  EXPECT_EQ(model_family(named("gpt2-tiny")), ModelFamily::Gpt2);
  EXPECT_EQ(model_family(named("gpt2-xl")), ModelFamily::Gpt2);
  EXPECT_EQ(model_family(named("resnet18")), ModelFamily::Resnet);
  EXPECT_TRUE(is_image_model(named("resnet-small")));
  EXPECT_FALSE(is_image_model(named("gpt2-mini")));
  EXPECT_FALSE(is_image_model(named("no-such-model")));  // never throws: the build reports it
}

TEST(ModelRegistry, UnknownNameListsThePresets) {
  try {
    make_model(*make_cpu_backend(1), named("gpt3"));
    FAIL() << "an unknown model was built";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown model 'gpt3'"), std::string::npos) << what;
    EXPECT_NE(what.find("resnet18"), std::string::npos) << what;
    EXPECT_NE(what.find("gpt2-xl"), std::string::npos) << what;
  }
  EXPECT_THROW(model_config_json(named("gpt3")), InputError);
  EXPECT_THROW(model_context(named("gpt3")), InputError);
}

TEST(ModelRegistry, EveryPresetHasItsParameterCount) {
  // Building the big presets would allocate gigabytes: the registry's rows and configurations must
  // agree without it, and the small ones are built for real.
  for (const PresetRow& row : list_presets()) {
    const nlohmann::json config = model_config_json(named(row.name));
    EXPECT_EQ(config.at("params").get<std::size_t>(), row.params) << row.name;
    EXPECT_EQ(config.at("name"), row.name);
  }
  auto backend = make_cpu_backend(1);
  for (const char* small : {"gpt2-tiny", "resnet-tiny"}) {
    const auto model = make_model(*backend, named(small));
    EXPECT_EQ(model->num_params(), model_config_json(named(small)).at("params").get<std::size_t>()) << small;
  }
}

// Model::place_grads (a CPU run's gradients in a buffer the ranks share): the arena moves into the
// caller's memory with its values, the model then reads and writes it there, and never frees it.
TEST(ModelRegistry, GradientsPlacedInCallerMemoryKeepTheirValuesAndStayTheCallers) {
  auto backend = make_cpu_backend(1);
  for (const char* small : {"gpt2-tiny", "resnet-tiny"}) {
    std::vector<float> memory;  // declared before the model: it outlives the model's use of it
    auto model = make_model(*backend, named(small));
    const std::size_t n = model->num_params();
    for (std::size_t i = 0; i < n; ++i) model->grad_data()[i] = static_cast<float>(i % 97);
    memory.assign(n + 3, -1.0f);
    model->place_grads(memory);
    EXPECT_EQ(model->grad_data(), memory.data()) << small;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += memory[i] != static_cast<float>(i % 97) ? 1 : 0;
    EXPECT_EQ(wrong, 0U) << small;
    model->zero_grad();
    EXPECT_EQ(std::count(memory.begin(), memory.begin() + static_cast<std::ptrdiff_t>(n), 0.0f),
              static_cast<std::ptrdiff_t>(n))
        << small;
    EXPECT_EQ(memory[n], -1.0f) << small;  // past the arena: untouched
    model.reset();                         // frees its own arenas, not `memory` (ASan: no bad free)
    memory[0] = 1.0f;
  }
}

TEST(ModelRegistry, CheckpointConfigurationRebuildsTheModel) {
  ModelOptions gpt = named("gpt2-tiny");
  gpt.n_layer = 3;
  gpt.vocab = 300;
  const nlohmann::json saved = model_config_json(gpt);
  const ModelOptions back = model_options_from_json(saved, "ckpt.json");
  EXPECT_EQ(model_config_json(back), saved);
  EXPECT_EQ(model_vocab(back), 300);

  ModelOptions cnn = named("resnet-tiny");
  cnn.image_channels = 3;
  cnn.image_size = 32;
  cnn.num_classes = 7;
  const ModelOptions cnn_back = model_options_from_json(model_config_json(cnn), "ckpt.json");
  EXPECT_EQ(model_config_json(cnn_back), model_config_json(cnn));
  EXPECT_EQ(model_context(cnn_back), INT_MAX);  // image models have no sequence length
  EXPECT_EQ(model_vocab(cnn_back), 0);
  EXPECT_FALSE(model_config_json(cnn).contains("stem"));  // the preset's rule: configurations unchanged

  // A chosen stem (bench step --stem) is part of the configuration and rebuilds the same model.
  cnn.stem = ResnetStem::ImageNet;
  const nlohmann::json imagenet = model_config_json(cnn);
  EXPECT_EQ(imagenet.at("stem"), "imagenet");
  EXPECT_NE(imagenet.at("params"), model_config_json(cnn_back).at("params"));
  EXPECT_EQ(model_config_json(model_options_from_json(imagenet, "ckpt.json")), imagenet);
}

TEST(ModelRegistry, CheckpointWithoutModelIsInputError) {
  const nlohmann::json config{{"model", model_config_json(named("gpt2-tiny"))}, {"seed", 1}};
  EXPECT_EQ(model_options_from_checkpoint(config, "ckpt").name, "gpt2-tiny");
  try {
    model_options_from_checkpoint(nlohmann::json{{"seed", 1}}, "runs/ckpt/step_00000010");
    FAIL() << "a checkpoint without a model configuration was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("runs/ckpt/step_00000010: checkpoint has no model"),
              std::string::npos);
  }
}

TEST(ModelRegistry, MalformedConfigurationIsInputError) {
  EXPECT_THROW(model_options_from_json(nlohmann::json{{"name", "gpt2-tiny"}}, "ckpt.json"), InputError);
  EXPECT_THROW(model_options_from_json(nlohmann::json{{"family", "resnet"}, {"name", 3}}, "ckpt.json"),
               InputError);
}

}  // namespace
}  // namespace tt
