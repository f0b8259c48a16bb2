// Gpt2Config: presets, published parameter counts, validation, and the parameter table's layout.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "models/gpt2/gpt2.h"
#include "models/model_registry.h"

namespace tt {
namespace {

TEST(Gpt2Config, PublishedParameterCounts) {
  // Tied embeddings, vocabulary 50257, context 1024 (HF model cards / nanoGPT's count including wpe).
  EXPECT_EQ(Gpt2Config::preset("gpt2").num_params(), 124439808u);
  EXPECT_EQ(Gpt2Config::preset("gpt2-medium").num_params(), 354823168u);
  EXPECT_EQ(Gpt2Config::preset("gpt2-large").num_params(), 774030080u);
  EXPECT_EQ(Gpt2Config::preset("gpt2-xl").num_params(), 1557611200u);
  EXPECT_EQ(Gpt2Config::preset("gpt2-tiny").num_params(), 34688u);
  EXPECT_EQ(Gpt2Config::preset("gpt2-mini").num_params(), 3290624u);
}

TEST(Gpt2Config, PresetsAreValidAndUnique) {
  std::set<std::string> names;
  for (const Gpt2Preset& p : Gpt2Config::presets()) {
    EXPECT_NO_THROW(p.config.validate()) << p.name;
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.note.empty());
  }
  for (const char* n : {"gpt2-tiny", "gpt2-mini", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
}

TEST(Gpt2Config, UnknownPresetListsValidNames) {
  try {
    (void)Gpt2Config::preset("gpt3");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpt3"), std::string::npos) << what;
    EXPECT_NE(what.find("gpt2-tiny"), std::string::npos) << what;
    EXPECT_NE(what.find("gpt2-xl"), std::string::npos) << what;
  }
}

TEST(Gpt2Config, ValidationRejectsNonsense) {
  const Gpt2Config ok = Gpt2Config::preset("gpt2-tiny");
  auto with = [&ok](auto edit) {
    Gpt2Config c = ok;
    edit(c);
    return c;
  };
  EXPECT_THROW(with([](Gpt2Config& c) { c.n_embd = 33; }).validate(), InputError);  // 33 % 2 != 0
  EXPECT_THROW(with([](Gpt2Config& c) { c.n_layer = 0; }).validate(), InputError);
  EXPECT_THROW(with([](Gpt2Config& c) { c.n_head = -1; }).validate(), InputError);
  EXPECT_THROW(with([](Gpt2Config& c) { c.vocab_size = 0; }).validate(), InputError);
  EXPECT_THROW(with([](Gpt2Config& c) { c.context = 0; }).validate(), InputError);
  EXPECT_THROW(with([](Gpt2Config& c) { c.vocab_multiple = 0; }).validate(), InputError);
  auto backend = make_cpu_backend(1);
  EXPECT_THROW(Gpt2(*backend, with([](Gpt2Config& c) { c.n_head = 3; })), InputError);
}

TEST(Gpt2Config, VocabularyPadding) {
  Gpt2Config c = Gpt2Config::preset("gpt2");
  EXPECT_EQ(c.padded_vocab(), 50257);
  c.vocab_multiple = 64;
  EXPECT_EQ(c.padded_vocab(), 50304);  // llm.c's Vp
  EXPECT_EQ(c.num_params(), 124439808u + 47u * 768u);
}

TEST(Gpt2Config, ParameterTableLayout) {
  auto backend = make_cpu_backend(1);
  Gpt2 model(*backend, Gpt2Config::preset("gpt2-tiny"), "gpt2-tiny");
  EXPECT_EQ(model.name(), "gpt2-tiny");
  const auto& ps = model.params();
  ASSERT_EQ(ps.size(), 2u + 12u * 2u + 2u);
  std::size_t offset = 0;
  for (const ParamInfo& p : ps) {
    EXPECT_EQ(p.offset, offset) << p.name;  // contiguous, in forward order
    std::size_t numel = 1;
    for (int64_t d : p.shape) numel *= static_cast<std::size_t>(d);
    EXPECT_EQ(p.numel, numel) << p.name;
    EXPECT_EQ(p.decay, p.shape.size() == 2) << p.name;
    offset += p.numel;
  }
  EXPECT_EQ(offset, model.num_params());
  EXPECT_EQ(ps.front().name, "wte");
  EXPECT_EQ(ps[1].name, "wpe");
  EXPECT_EQ(ps[2].name, "h.0.ln_1.weight");
  EXPECT_EQ(ps[4].name, "h.0.attn.c_attn.weight");
  EXPECT_EQ(ps[4].shape, (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(ps[12].name, "h.0.mlp.c_proj.weight");
  EXPECT_EQ(ps[12].shape, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(ps.back().name, "ln_f.bias");
  EXPECT_EQ(model.param("h.1.mlp.c_fc.bias").shape, (std::vector<int64_t>{128}));
  EXPECT_THROW((void)model.param("lm_head.weight"), InputError);
}

TEST(Gpt2Config, FlopsAndActivationBytes) {
  auto backend = make_cpu_backend(1);
  Gpt2 model(*backend, Gpt2Config::preset("gpt2-tiny"));
  const int B = 4, T = 16, C = 32, L = 2, V = 256;
  const double N = B * T;
  const double fwd = L * (24.0 * N * C * C + 4.0 * B * T * T * C) + 2.0 * N * C * V;
  const StepFlops f = model.flops(B, T);
  EXPECT_DOUBLE_EQ(f.forward, fwd);
  EXPECT_DOUBLE_EQ(f.backward, 2 * fwd);
  // Grows with the batch, and holds at least the saved per-layer activations (~ 16 (B,T,C) per layer).
  EXPECT_GT(model.activation_bytes(B, T), static_cast<std::size_t>(L * 16 * N * C * 4));
  EXPECT_GT(model.activation_bytes(2 * B, T), model.activation_bytes(B, T));
  EXPECT_EQ(model.activation_bytes(B, T), Gpt2::activation_bytes_for(model.config(), B, T));
  // Static versions need no model (gpt2-xl's parameters and gradients alone would be 12.5 GB).
  const Gpt2Config xl = Gpt2Config::preset("gpt2-xl");
  EXPECT_GT(Gpt2::activation_bytes_for(xl, 1, 1024), static_cast<std::size_t>(48) * 16 * 1024 * 1600 * 4);
  EXPECT_GT(Gpt2::flops_for(xl, 1, 1024).forward, 2.0 * 1.5e9 * 1024);
  // Of them, attention's (B, NH, T, T) tensors: each layer's and backward's one scratch (what a fused
  // attention kernel never stores: Note [Fused attention baseline]).
  ModelOptions o;
  o.name = "gpt2-xl";
  const ModelMemory m = model_memory(o, 4, 1024);
  EXPECT_EQ(m.attention_bytes, std::size_t{49} * 4 * 25 * 1024 * 1024 * 4);
  EXPECT_EQ(m.activation_bytes, Gpt2::activation_bytes_for(xl, 4, 1024));
  EXPECT_GT(m.activation_bytes - m.attention_bytes, static_cast<std::size_t>(48) * 16 * 4 * 1024 * 1600 * 4);
}

}  // namespace
}  // namespace tt
