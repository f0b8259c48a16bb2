// The Llama family: published parameter counts, the layout a Llama checkpoint names, and llama-tiny
// against the PyTorch reference in tests/fixtures/llama_tiny (tools/fixtures/make_llama_fixtures.py
// documents the format and how to regenerate it).
//
// Tolerances: the reference is float64 arithmetic on the same float32 parameters, so they bound our float32
// rounding: the loss and every gradient tensor within relative error 1e-5 (the gradient as a whole,
// ||got - want|| / ||want||), and each element as the GPT-2 fixture test holds them. The CUDA backend is
// held to the same tolerances where a GPU is visible (scripts/gpu-check.sh runs it there).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "base/error.h"
#include "core/backend_factory.h"
#include "core/cpu/cpu_backend.h"
#include "models/llama/llama.h"
#include "models/model_registry.h"
#include "tests/models/fixture_test_util.h"

namespace tt {
namespace {

using fixture_test::load_params;
using fixture_test::to_host;
using fixture_test::worst;

struct Reference : fixture_test::TokenFixture {
  Reference() : TokenFixture("llama_tiny") {}
  LlamaConfig config() const {
    LlamaConfig cfg = TokenFixture::config<LlamaConfig>();
    const auto& c = manifest.at("config");
    cfg.n_kv_head = c.at("n_kv_head").get<int>();
    cfg.ffn_hidden = c.at("ffn_hidden").get<int>();
    cfg.rope_base = c.at("rope_base").get<float>();
    cfg.tied = c.at("tied").get<bool>();
    return cfg;
  }
};

TEST(LlamaConfig, PublishedParameterCounts) {
  // Each model's published count (config.json shapes); to three digits 135M, 1.24B, 8.03B, 70.6B.
  EXPECT_EQ(LlamaConfig::preset("smollm2-135m").num_params(), 134515008u);
  EXPECT_EQ(LlamaConfig::preset("llama-3.2-1b").num_params(), 1235814400u);
  EXPECT_EQ(LlamaConfig::preset("llama-3-8b").num_params(), 8030261248u);
  EXPECT_EQ(LlamaConfig::preset("llama-3-70b").num_params(), 70553706496u);
  for (const LlamaPreset& p : LlamaConfig::presets()) {
    EXPECT_NO_THROW(p.config.validate()) << p.name;
    std::size_t sum = 0;
    for (const ParamInfo& i : Llama::param_table(p.config)) sum += i.numel;
    EXPECT_EQ(sum, p.config.num_params()) << p.name;
  }
}

TEST(LlamaConfig, RegistryBuildsAndListsTheFamily) {
  ModelOptions o;
  o.name = "llama-3-8b";
  EXPECT_EQ(model_family(o), ModelFamily::Llama);
  EXPECT_EQ(model_config_json(o).at("family"), "llama");
  EXPECT_EQ(model_options_from_json(model_config_json(o), "x").name, "llama-3-8b");
  int listed = 0;
  for (const PresetRow& r : list_presets()) listed += LlamaConfig::is_preset(r.name) ? 1 : 0;
  EXPECT_EQ(listed, 6);
  LlamaConfig bad = LlamaConfig::preset("llama-tiny");
  bad.n_kv_head = 3;  // 4 query heads cannot share 3 key/value heads
  EXPECT_THROW(bad.validate(), InputError);
}

TEST(LlamaConfig, CheckpointNames) {
  const std::vector<ParamInfo> t = Llama::param_table(LlamaConfig::preset("llama-3-8b"));
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(t[3].shape, (std::vector<int64_t>{1024, 4096}));  // k_proj: 8 key/value heads of 128
  EXPECT_EQ(t.back().name, "lm_head.weight");                 // untied
  EXPECT_EQ(Llama::param_table(LlamaConfig::preset("llama-3.2-1b")).back().name, "model.norm.weight");
}

TEST(LlamaFixture, ManifestMatchesOurLayout) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Llama model(*be, ref.config());
  fixture_test::expect_layout_matches(model, ref.manifest);
  EXPECT_EQ(ref.params.size(), model.num_params());
}

// ||got - want|| / ||want|| over one tensor.
double relative_error(const float* got, const float* want, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

void expect_forward_and_gradients_match(Backend& be) {
  Reference ref;
  Llama model(be, ref.config());
  load_params(be, model, ref.params);
  model.zero_grad();
  const double want = ref.manifest.at("loss").get<double>();
  EXPECT_NEAR(model.forward(ref.batch()), want, 1e-5 * want);
  const std::vector<float> logits = to_host(be, model.logits(), ref.logits.size());
  const auto m = worst(logits.data(), ref.logits.data(), logits.size(), 1e-4, 1e-5);
  EXPECT_LE(m.excess, 0.0) << "logits[" << m.index << "]: got " << m.got << " want " << m.want;
  model.backward({});
  const std::vector<float> grads = to_host(be, model.grad_data(), model.num_params());
  fixture_test::expect_grads_match(model, grads, ref.manifest, ref.grads);
  for (const ParamInfo& p : model.params()) {
    EXPECT_LE(relative_error(grads.data() + p.offset, ref.grads.data() + p.offset, p.numel), 1e-5) << p.name;
  }
}

void expect_adamw_steps_match(Backend& be) {
  Reference ref;
  Llama model(be, ref.config());
  load_params(be, model, ref.params);
  const auto got = fixture_test::run_adamw(be, model, ref.batch(), ref.manifest).first;
  const auto w = worst(got.data(), ref.final_params.data(), got.size(), 1e-4, 2e-5);
  EXPECT_LE(w.excess, 0.0) << "final param [" << w.index << "]: got " << w.got << " want " << w.want;
}

// The CUDA backend (FP32, no TF32) against the same reference; skipped where no GPU is visible.
std::unique_ptr<Backend> cuda_backend_or_null() {
  if (cuda_device_count() == 0) return nullptr;
  return make_backend(backend_options(DeviceKind::Cuda, 1));
}

TEST(LlamaFixture, ForwardAndEveryGradientMatchPyTorch) {
  auto be = make_cpu_backend(2);
  expect_forward_and_gradients_match(*be);
}

TEST(LlamaFixture, AdamWTenStepsMatch) {
  auto be = make_cpu_backend(2);
  expect_adamw_steps_match(*be);
}

TEST(LlamaFixture, CudaForwardAndEveryGradientMatchPyTorch) {
  auto be = cuda_backend_or_null();
  if (!be) GTEST_SKIP() << "no CUDA GPU visible (or a build without CUDA)";
  expect_forward_and_gradients_match(*be);
}

TEST(LlamaFixture, CudaAdamWTenStepsMatch) {
  auto be = cuda_backend_or_null();
  if (!be) GTEST_SKIP() << "no CUDA GPU visible (or a build without CUDA)";
  expect_adamw_steps_match(*be);
}

TEST(LlamaModel, GradientsBecomeReadyFromTheTopDown) {
  auto be = make_cpu_backend(2);
  for (bool tied : {false, true}) {
    LlamaConfig cfg = LlamaConfig::preset("llama-tiny");
    cfg.tied = tied;
    Llama model(*be, cfg);
    model.init_params(7);
    Reference ref;
    model.zero_grad();
    (void)model.forward(ref.batch());
    std::vector<std::size_t> from;
    model.backward([&from](std::size_t f) { from.push_back(f); });
    ASSERT_FALSE(from.empty());
    EXPECT_EQ(from.back(), 0u);
    for (std::size_t i = 1; i < from.size(); ++i) EXPECT_LT(from[i], from[i - 1]);
    // 2 layers, the final norm, the embedding, and the untied head.
    EXPECT_EQ(from.size(), tied ? 4u : 5u);
  }
}

}  // namespace
}  // namespace tt
