// Bert beyond the fixture: the published parameter counts, gradient-readiness signals, finite
// differences of the whole model's loss, BERT's init, evaluation counts and bad input; and the
// masked-LM batches of engine/input/mlm_masking.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/rng.h"
#include "engine/input/mlm_masking.h"
#include "models/bert/bert.h"
#include "tests/models/fixture_test_util.h"

namespace tt {
namespace {

using fixture_test::to_host;

// Random windows masked as in training (seed fixed), so every kind of position occurs.
Batch masked_batch(int B, int T, int V, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i)
    b.tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(V - 1))));
  MlmMasking{seed, V - 1, V - 1, 0.3}.apply(b, 0);
  return b;
}

TEST(BertConfig, PublishedShapesGiveHfBertForMaskedLmCounts) {
  // HF BertForMaskedLM (no pooler, MLM head with the decoder tied): 109,514,298 and 335,174,458.
  // BertModel's published "110M" / "340M" (109,482,240 / 335,141,888) include the pooler instead.
  EXPECT_EQ(BertConfig::preset("bert-base").num_params(), 109514298u);
  EXPECT_EQ(BertConfig::preset("bert-large").num_params(), 335174458u);
  const std::size_t base_pooler = 768 * 768 + 768, base_head = 768 * 768 + 768 + 2 * 768 + 30522;
  EXPECT_EQ(BertConfig::preset("bert-base").num_params() - base_head + base_pooler, 109482240u);
  EXPECT_EQ(BertConfig::preset("bert-tiny").mask_token(), 256);
  EXPECT_THROW(BertConfig::preset("bert-huge"), InputError);
  BertConfig bad = BertConfig::preset("bert-tiny");
  bad.n_head = 3;
  EXPECT_THROW(bad.validate(), InputError);
}

TEST(BertModel, GradReadySignalsAreMonotonicAndFinal) {
  auto be = make_cpu_backend(2);
  const BertConfig cfg = BertConfig::preset("bert-tiny");
  Bert model(*be, cfg);
  model.init_params(7);
  model.zero_grad();
  (void)model.forward(masked_batch(2, 8, cfg.vocab_size, 1));
  const std::vector<std::size_t> froms = fixture_test::backward_ready_signals(*be, model);
  ASSERT_EQ(froms.size(), static_cast<std::size_t>(cfg.n_layer) + 2);
  EXPECT_EQ(froms.front(), model.param("cls.predictions.transform.dense.weight").offset);
  EXPECT_EQ(froms[1], model.param("encoder.layer.1.attention.self.qkv.weight").offset);
}

TEST(BertModel, FiniteDifferencesOfTheLoss) {
  // A tensor of every kind, on the fixture's (large, non-zero-bias) parameters.
  auto be = make_cpu_backend(2);
  Bert model(*be, BertConfig::preset("bert-tiny"));
  fixture_test::load_params(*be, model, fixture_test::read_bin<float>("params.bin", "bert_tiny"));
  fixture_test::expect_finite_differences(
      *be, model, masked_batch(2, 8, 257, 3),
      {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
       "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias",
       "encoder.layer.0.attention.self.qkv.weight", "encoder.layer.0.attention.self.qkv.bias",
       "encoder.layer.1.attention.output.dense.weight", "encoder.layer.0.attention.output.LayerNorm.bias",
       "encoder.layer.1.intermediate.dense.weight", "encoder.layer.0.output.dense.bias",
       "encoder.layer.1.output.LayerNorm.weight", "cls.predictions.transform.dense.weight",
       "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias"});
}

TEST(BertModel, InitIsDeterministicAndBertStyle) {
  auto be = make_cpu_backend(2);
  Bert a(*be, BertConfig::preset("bert-mini"));
  Bert b(*be, BertConfig::preset("bert-mini"));
  a.init_params(42);
  b.init_params(42);
  const auto pa = to_host(*be, a.param_data(), a.num_params());
  EXPECT_EQ(pa, to_host(*be, b.param_data(), b.num_params()));
  for (const ParamInfo& p : a.params()) {
    if (p.shape.size() == 1) {
      const float want = p.name.ends_with("LayerNorm.weight") ? 1.0f : 0.0f;
      for (std::size_t i = 0; i < p.numel; ++i) ASSERT_EQ(pa[p.offset + i], want) << p.name;
      continue;
    }
    double s2 = 0;
    for (std::size_t i = 0; i < p.numel; ++i) s2 += static_cast<double>(pa[p.offset + i]) * pa[p.offset + i];
    EXPECT_NEAR(std::sqrt(s2 / static_cast<double>(p.numel)), 0.02, p.numel > 1000 ? 0.002 : 0.01) << p.name;
  }
}

TEST(BertModel, EvaluateCountsOnlyThePredictedPositions) {
  auto be = make_cpu_backend(2);
  Bert model(*be, BertConfig::preset("bert-tiny"));
  model.init_params(3);
  const Batch batch = masked_batch(3, 10, 257, 5);
  const long predicted =
      std::count_if(batch.targets.begin(), batch.targets.end(), [](int32_t t) { return t != kIgnoreTarget; });
  const EvalResult r = model.evaluate(batch);
  EXPECT_EQ(r.count, predicted);
  EXPECT_GE(r.correct, 0);
  EXPECT_LE(r.correct, r.count);
  EXPECT_NEAR(r.loss_sum / r.count, std::log(257.0), 0.3);  // near-uniform at init
  // correct counts argmax hits among the predicted rows of the whole (B, T, V) logits: aim every
  // other predicted target at its row's argmax (targets do not change the logits), so that some hit.
  const std::vector<float> logits = to_host(*be, model.logits(), batch.targets.size() * 257);
  Batch aimed = batch;
  int want = 0, k = 0;
  for (std::size_t n = 0; n < aimed.targets.size(); ++n) {
    if (aimed.targets[n] == kIgnoreTarget) continue;
    const float* row = logits.data() + n * 257;
    const auto best = static_cast<int32_t>(std::max_element(row, row + 257) - row);
    if (k++ % 2 == 0) aimed.targets[n] = best;
    want += aimed.targets[n] == best ? 1 : 0;
  }
  ASSERT_GT(want, 0);
  EXPECT_EQ(model.evaluate(aimed).correct, want);
}

TEST(BertModel, BadInputIsRefused) {
  auto be = make_cpu_backend(2);
  const BertConfig cfg = BertConfig::preset("bert-tiny");
  Bert model(*be, cfg);
  model.init_params(1);
  Batch b = masked_batch(1, 8, cfg.vocab_size, 2);
  Batch none = b;
  std::fill(none.targets.begin(), none.targets.end(), kIgnoreTarget);
  EXPECT_THROW(model.forward(none), InputError);  // nothing to predict: the mean would be 0/0
  Batch big = b;
  big.tokens[0] = cfg.vocab_size;
  EXPECT_THROW(model.forward(big), InputError);
  Batch neg = b;
  neg.targets[0] = -2;
  EXPECT_THROW(model.forward(neg), InputError);
  EXPECT_THROW(model.reserve(1, cfg.context + 1), InputError);
  Bert fresh(*be, cfg);
  EXPECT_THROW(fresh.backward({}), RunError);
}

TEST(MlmMasking, FollowsBertsRecipeAndDependsOnlyOnTheSample) {
  const int T = 100, B = 40, V = 257;
  Rng rng(11);
  Batch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i) b.tokens.push_back(static_cast<int32_t>(rng.below(V - 1)));
  const std::vector<int32_t> original = b.tokens;
  const MlmMasking m{77, V - 1, V - 1};
  m.apply(b, 1000);
  int predicted = 0, masked = 0, kept = 0;
  for (std::size_t i = 0; i < b.tokens.size(); ++i) {
    if (b.targets[i] == kIgnoreTarget) {
      ASSERT_EQ(b.tokens[i], original[i]) << "an unpredicted position must stay itself";
      continue;
    }
    ASSERT_EQ(b.targets[i], original[i]);
    ++predicted;
    masked += b.tokens[i] == V - 1 ? 1 : 0;
    kept += b.tokens[i] == original[i] ? 1 : 0;
  }
  EXPECT_EQ(predicted, B * 15);  // round(0.15 * 100) per window
  EXPECT_NEAR(masked / static_cast<double>(predicted), 0.8, 0.05);
  EXPECT_NEAR(kept / static_cast<double>(predicted), 0.1, 0.04);  // plus a few random draws of itself

  // Samples 1002..1003 masked on their own give the rows they had inside the batch of 40.
  Batch part;
  part.B = 2;
  part.T = T;
  part.tokens.assign(original.begin() + 2 * T, original.begin() + 4 * T);
  m.apply(part, 1002);
  EXPECT_TRUE(std::equal(part.tokens.begin(), part.tokens.end(), b.tokens.begin() + 2 * T));
  EXPECT_TRUE(std::equal(part.targets.begin(), part.targets.end(), b.targets.begin() + 2 * T));

  Batch tiny;
  tiny.B = 1;
  tiny.T = 3;
  tiny.tokens = {1, 2, 3};
  m.apply(tiny, 0);
  EXPECT_EQ(
      std::count_if(tiny.targets.begin(), tiny.targets.end(), [](int32_t t) { return t != kIgnoreTarget; }),
      1);                                                            // at least one position per window
  EXPECT_THROW((MlmMasking{1, 10, 11}.apply(tiny, 0)), InputError);  // data ids reach [MASK]
}

}  // namespace
}  // namespace tt
