// Gpt2 behaviour beyond the fixture: gradient-readiness signals, init determinism, finite differences
// of the whole model's loss, batch shapes and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/rng.h"
#include "models/gpt2/gpt2.h"
#include "tests/models/fixture_test_util.h"

namespace tt {
namespace {

using fixture_test::to_host;

Batch random_batch(int B, int T, int V, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(V))));
    b.targets.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(V))));
  }
  return b;
}

// The fixture's parameters are larger than GPT-2's init, which makes every path matter.
void load_fixture_params(Backend& be, Gpt2& model) {
  const auto params = fixture_test::read_bin<float>("params.bin");
  ASSERT_EQ(params.size(), model.num_params());
  be.copy_to_device(model.param_data(), params.data(), params.size() * sizeof(float));
}

TEST(Gpt2Model, GradReadySignalsAreMonotonicAndFinal) {
  auto be = make_cpu_backend(2);
  const Gpt2Config cfg = Gpt2Config::preset("gpt2-tiny");
  Gpt2 model(*be, cfg);
  model.init_params(7);
  model.zero_grad();
  (void)model.forward(random_batch(2, 8, cfg.vocab_size, 1));
  const std::vector<std::size_t> froms = fixture_test::backward_ready_signals(*be, model);
  ASSERT_EQ(froms.size(), static_cast<std::size_t>(cfg.n_layer) + 2);
  EXPECT_EQ(froms.front(), model.param("ln_f.weight").offset);
  for (int l = 0; l < cfg.n_layer; ++l) {
    EXPECT_EQ(froms[froms.size() - 2 - static_cast<std::size_t>(l)],
              model.param("h." + std::to_string(l) + ".ln_1.weight").offset);
  }
}

TEST(Gpt2Model, InitIsDeterministicAndGpt2Style) {
  auto be = make_cpu_backend(2);
  Gpt2Config cfg = Gpt2Config::preset("gpt2-mini");
  cfg.vocab_multiple = 64 * 5;  // 256 -> 320: padded rows must stay zero
  Gpt2 a(*be, cfg);
  Gpt2 b(*be, cfg);
  a.init_params(42);
  b.init_params(42);
  const auto pa = to_host(*be, a.param_data(), a.num_params());
  const auto pb = to_host(*be, b.param_data(), b.num_params());
  EXPECT_EQ(pa, pb);
  b.init_params(43);
  EXPECT_NE(pa, to_host(*be, b.param_data(), b.num_params()));

  auto stats = [&pa](const ParamInfo& p, std::size_t n) {
    double s = 0, s2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      s += pa[p.offset + i];
      s2 += static_cast<double>(pa[p.offset + i]) * pa[p.offset + i];
    }
    return std::pair{s / static_cast<double>(n), std::sqrt(s2 / static_cast<double>(n))};
  };
  const ParamInfo& wte = a.param("wte");
  const std::size_t real = static_cast<std::size_t>(cfg.vocab_size) * static_cast<std::size_t>(cfg.n_embd);
  EXPECT_NEAR(stats(wte, real).second, 0.02, 0.001);
  for (std::size_t i = real; i < wte.numel; ++i) ASSERT_EQ(pa[wte.offset + i], 0.0f);
  EXPECT_NEAR(stats(a.param("h.1.attn.c_attn.weight"), a.param("h.1.attn.c_attn.weight").numel).second, 0.02,
              0.001);
  const double proj = 0.02 / std::sqrt(2.0 * cfg.n_layer);
  EXPECT_NEAR(stats(a.param("h.2.mlp.c_proj.weight"), a.param("h.2.mlp.c_proj.weight").numel).second, proj,
              0.1 * proj);
  for (const ParamInfo& p : a.params()) {
    if (p.shape.size() != 1) continue;
    const bool gain = p.name.find("ln_") != std::string::npos && p.name.ends_with(".weight");
    for (std::size_t i = 0; i < p.numel; ++i) ASSERT_EQ(pa[p.offset + i], gain ? 1.0f : 0.0f) << p.name;
  }
}

TEST(Gpt2Model, FiniteDifferencesOfTheLoss) {
  // Several tensors across the whole model, on the fixture parameters.
  auto be = make_cpu_backend(2);
  Gpt2 model(*be, Gpt2Config::preset("gpt2-tiny"));
  load_fixture_params(*be, model);
  fixture_test::expect_finite_differences(
      *be, model, random_batch(2, 8, 256, 3),
      {"wte", "wpe", "h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
       "h.1.attn.c_proj.weight", "h.1.ln_2.bias", "h.1.mlp.c_fc.weight", "h.0.mlp.c_proj.bias", "ln_f.weight",
       "ln_f.bias"});
}

TEST(Gpt2Model, SmallerBatchesUseAPrefixOfTheArenas) {
  // After reserving a larger shape, a smaller batch gives exactly what a fresh model gives.
  auto be = make_cpu_backend(2);
  const Gpt2Config cfg = Gpt2Config::preset("gpt2-tiny");
  Gpt2 big(*be, cfg);
  Gpt2 fresh(*be, cfg);
  big.init_params(5);
  fresh.init_params(5);
  big.reserve(4, 32);
  (void)big.forward(random_batch(4, 32, cfg.vocab_size, 9));
  const Batch small = random_batch(3, 5, cfg.vocab_size, 10);
  big.zero_grad();
  fresh.zero_grad();
  EXPECT_EQ(big.forward(small), fresh.forward(small));
  big.backward({});
  fresh.backward({});
  EXPECT_EQ(to_host(*be, big.grad_data(), big.num_params()),
            to_host(*be, fresh.grad_data(), fresh.num_params()));
  // Growing again after use works too.
  EXPECT_NO_THROW((void)big.forward(random_batch(5, 32, cfg.vocab_size, 11)));
}

TEST(Gpt2Model, ForwardLogitsMatchTheLastPosition) {
  auto be = make_cpu_backend(2);
  Gpt2Config cfg = Gpt2Config::preset("gpt2-tiny");
  cfg.vocab_multiple = 96;  // padded columns must be dropped
  Gpt2 model(*be, cfg);
  model.init_params(11);
  const Batch batch = random_batch(2, 6, cfg.vocab_size, 12);
  (void)model.forward(batch);
  const int Vp = cfg.padded_vocab();
  const auto all = to_host(*be, model.logits(), static_cast<std::size_t>(2 * 6 * Vp));
  const std::vector<float> last = model.forward_logits(batch.tokens, 2, 6);
  ASSERT_EQ(last.size(), static_cast<std::size_t>(2 * cfg.vocab_size));
  for (int b = 0; b < 2; ++b) {
    for (int v = 0; v < cfg.vocab_size; ++v) {
      EXPECT_NEAR(last[static_cast<std::size_t>(b * cfg.vocab_size + v)],
                  all[static_cast<std::size_t>((b * 6 + 5) * Vp + v)], 1e-5);
    }
  }
  // forward_logits leaves no forward state for backward.
  EXPECT_THROW(model.backward({}), RunError);
}

TEST(Gpt2Model, BadInputIsRefused) {
  auto be = make_cpu_backend(1);
  const Gpt2Config cfg = Gpt2Config::preset("gpt2-tiny");
  Gpt2 model(*be, cfg);
  model.init_params(1);
  EXPECT_THROW(model.backward({}), RunError);  // no forward yet
  EXPECT_THROW(model.reserve(0, 8), InputError);
  EXPECT_THROW(model.reserve(2, cfg.context + 1), InputError);
  EXPECT_THROW((void)model.forward(random_batch(1, cfg.context + 1, cfg.vocab_size, 1)), InputError);
  Batch bad = random_batch(2, 4, cfg.vocab_size, 2);
  bad.tokens[3] = cfg.vocab_size;
  EXPECT_THROW((void)model.forward(bad), InputError);
  bad = random_batch(2, 4, cfg.vocab_size, 2);
  bad.targets[0] = -1;
  EXPECT_THROW((void)model.forward(bad), InputError);
  bad = random_batch(2, 4, cfg.vocab_size, 2);
  bad.tokens.pop_back();
  EXPECT_THROW((void)model.forward(bad), InputError);
  EXPECT_THROW((void)model.forward_logits({1, 2, 3}, 1, 4), InputError);
}

}  // namespace
}  // namespace tt
