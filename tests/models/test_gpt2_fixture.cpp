// gpt2-tiny against the PyTorch reference in tests/fixtures/gpt2_tiny (see
// tools/fixtures/make_gpt2_fixtures.py for the format and how to regenerate it).
//
// Tolerances (the reference is float64 arithmetic on the same float32 parameters, so these bound our
// float32 rounding error, not a difference in the math):
//   logits          |got - want| <= 1e-5 + 1e-4 |want|
//   loss            relative 1e-5
//   gradients       per tensor: |got - want| <= 1e-4 * max|want of that tensor| + 1e-3 |want|
//   AdamW losses    relative 1e-4 at each of the 10 steps
//   final params    |got - want| <= 2e-5 + 1e-4 |want| (after 10 steps of ~lr = 1e-3 each), except
//                   the attention key biases, whose gradient is exactly zero (see the test)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/buffer.h"
#include "core/cpu/cpu_backend.h"
#include "models/gpt2/gpt2.h"
#include "tests/models/fixture_test_util.h"

namespace tt {
namespace {

using fixture_test::load_params;
using fixture_test::to_host;
using fixture_test::worst;

struct Reference : fixture_test::TokenFixture {
  Reference() : TokenFixture("gpt2_tiny") {}
  Gpt2Config config() const { return TokenFixture::config<Gpt2Config>(); }
};

void expect_grads_match(const Gpt2& model, const std::vector<float>& got, const Reference& ref) {
  fixture_test::expect_grads_match(model, got, ref.manifest, ref.grads);
}

TEST(Gpt2Fixture, ManifestMatchesOurLayout) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, ref.config());
  fixture_test::expect_layout_matches(model, ref.manifest);
  EXPECT_EQ(ref.params.size(), model.num_params());
  EXPECT_EQ(ref.grads.size(), model.num_params());
}

TEST(Gpt2Fixture, ForwardMatchesLogitsAndLoss) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, ref.config());
  load_params(*be, model, ref.params);
  const float loss = model.forward(ref.batch());
  EXPECT_NEAR(loss, ref.manifest.at("loss").get<double>(), 1e-5 * ref.manifest.at("loss").get<double>());
  const std::vector<float> logits = to_host(*be, model.logits(), ref.logits.size());
  const auto m = worst(logits.data(), ref.logits.data(), logits.size(), 1e-4, 1e-5);
  EXPECT_LE(m.excess, 0.0) << "logits[" << m.index << "]: got " << m.got << " want " << m.want;
}

TEST(Gpt2Fixture, BackwardMatchesEveryGradient) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, ref.config());
  load_params(*be, model, ref.params);
  model.zero_grad();
  (void)model.forward(ref.batch());
  model.backward({});
  expect_grads_match(model, to_host(*be, model.grad_data(), model.num_params()), ref);
}

TEST(Gpt2Fixture, GradientsAccumulateAcrossBackwardCalls) {
  // Gradient accumulation: two forward/backward passes without zero_grad give twice the gradient.
  Reference ref;
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, ref.config());
  load_params(*be, model, ref.params);
  model.zero_grad();
  for (int i = 0; i < 2; ++i) {
    (void)model.forward(ref.batch());
    model.backward({});
  }
  be->scale(model.grad_data(), 0.5f, model.num_params());
  expect_grads_match(model, to_host(*be, model.grad_data(), model.num_params()), ref);
}

TEST(Gpt2Fixture, AdamWTenStepsMatch) {
  // The trainer's policy: AdamW lr 1e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on
  // ParamInfo.decay tensors only, no clipping (the fixture script documents the same).
  Reference ref;
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, ref.config());
  load_params(*be, model, ref.params);
  const auto [got, lr] = fixture_test::run_adamw(*be, model, ref.batch(), ref.manifest);
  // The key bias (middle third of c_attn.bias) has a gradient that is exactly zero in exact arithmetic
  // (adding a constant to every key of a query shifts all its scores equally: softmax ignores it), so
  // both sides see pure rounding noise (~1e-18 in float64, ~1e-9 in float32) that Adam normalises
  // into steps of up to lr. Those entries only have to stay within the 10 * lr that 10 steps allow.
  std::vector<double> atol(got.size(), 2e-5);
  const int C = ref.config().n_embd;
  for (int l = 0; l < ref.config().n_layer; ++l) {
    const ParamInfo& b = model.param("h." + std::to_string(l) + ".attn.c_attn.bias");
    for (std::size_t i = b.offset + static_cast<std::size_t>(C);
         i < b.offset + 2 * static_cast<std::size_t>(C); ++i) {
      atol[i] = 10.0 * static_cast<double>(lr);
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto w = worst(got.data() + i, ref.final_params.data() + i, 1, 1e-4, atol[i]);
    ASSERT_LE(w.excess, 0.0) << "final param [" << i << "]: got " << w.got << " want " << w.want;
  }
}

TEST(Gpt2Fixture, PaddedVocabularyGivesTheSameResults) {
  // vocab_multiple 96 -> Vp = 288: 32 padded wte rows that must not change the loss or any gradient,
  // and whose own gradient stays zero.
  Reference ref;
  Gpt2Config cfg = ref.config();
  cfg.vocab_multiple = 96;
  ASSERT_EQ(cfg.padded_vocab(), 288);
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, cfg);
  std::vector<float> flat(model.num_params(), 0.0f);
  for (const auto& rp : ref.manifest.at("params")) {
    const ParamInfo& p = model.param(rp.at("name").get<std::string>());
    const auto src = ref.params.begin() + rp.at("offset").get<std::ptrdiff_t>();
    std::copy(src, src + rp.at("numel").get<std::ptrdiff_t>(),
              flat.begin() + static_cast<std::ptrdiff_t>(p.offset));
  }
  load_params(*be, model, flat);
  model.zero_grad();
  const float loss = model.forward(ref.batch());
  EXPECT_NEAR(loss, ref.manifest.at("loss").get<double>(), 1e-5 * ref.manifest.at("loss").get<double>());
  model.backward({});
  const std::vector<float> grads = to_host(*be, model.grad_data(), model.num_params());
  expect_grads_match(model, grads, ref);
  const ParamInfo& wte = model.param("wte");
  const std::size_t first_pad =
      static_cast<std::size_t>(cfg.vocab_size) * static_cast<std::size_t>(cfg.n_embd);
  for (std::size_t i = first_pad; i < wte.numel; ++i) ASSERT_EQ(grads[wte.offset + i], 0.0f) << i;
}

}  // namespace
}  // namespace tt
