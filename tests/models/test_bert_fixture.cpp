// bert-tiny against the PyTorch reference in tests/fixtures/bert_tiny (tools/fixtures/make_bert_fixtures.py
// documents the model, the masked batch and the format). Tolerances as test_gpt2_fixture.cpp: the
// reference is float64 arithmetic on the same float32 parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/buffer.h"
#include "core/cpu/cpu_backend.h"
#include "models/bert/bert.h"
#include "tests/models/fixture_test_util.h"

namespace tt {
namespace {

using fixture_test::load_params;
using fixture_test::to_host;
using fixture_test::worst;

struct Reference : fixture_test::TokenFixture {
  Reference() : TokenFixture("bert_tiny") {}
  BertConfig config() const { return TokenFixture::config<BertConfig>(); }
};

void expect_grads_match(const Bert& model, const std::vector<float>& got, const Reference& ref) {
  fixture_test::expect_grads_match(model, got, ref.manifest, ref.grads);
}

TEST(BertFixture, TheBatchIsAMaskedLmBatch) {
  Reference ref;
  const int mask = ref.config().mask_token();
  int predicted = 0, masked = 0;
  for (std::size_t i = 0; i < ref.targets.size(); ++i) {
    predicted += ref.targets[i] != kIgnoreTarget ? 1 : 0;
    masked += ref.tokens[i] == mask ? 1 : 0;
  }
  EXPECT_EQ(predicted, ref.B * ref.manifest.at("predicted_per_row").get<int>());
  EXPECT_EQ(masked, ref.B);
}

TEST(BertFixture, ManifestMatchesOurLayout) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Bert model(*be, ref.config());
  fixture_test::expect_layout_matches(model, ref.manifest);
  EXPECT_EQ(ref.params.size(), model.num_params());
}

TEST(BertFixture, ForwardMatchesLogitsAndLoss) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Bert model(*be, ref.config());
  load_params(*be, model, ref.params);
  const double want = ref.manifest.at("loss").get<double>();
  EXPECT_NEAR(model.forward(ref.batch()), want, 1e-5 * want);
  const std::vector<float> logits = to_host(*be, model.logits(), ref.logits.size());
  const auto m = worst(logits.data(), ref.logits.data(), logits.size(), 1e-4, 1e-5);
  EXPECT_LE(m.excess, 0.0) << "logits[" << m.index << "]: got " << m.got << " want " << m.want;
}

TEST(BertFixture, BackwardMatchesEveryGradient) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Bert model(*be, ref.config());
  load_params(*be, model, ref.params);
  model.zero_grad();
  (void)model.forward(ref.batch());
  model.backward({});
  expect_grads_match(model, to_host(*be, model.grad_data(), model.num_params()), ref);
}

TEST(BertFixture, AdamWTenStepsMatch) {
  Reference ref;
  auto be = make_cpu_backend(2);
  Bert model(*be, ref.config());
  load_params(*be, model, ref.params);
  const auto [got, lr] = fixture_test::run_adamw(*be, model, ref.batch(), ref.manifest);
  // The key bias's gradient is exactly zero in exact arithmetic (a constant added to every key of a
  // query shifts its scores equally), so Adam turns rounding noise into steps: those entries only have
  // to stay within the 10 * lr that 10 steps allow (as in test_gpt2_fixture.cpp).
  std::vector<double> atol(got.size(), 2e-5);
  const int C = ref.config().n_embd;
  for (int l = 0; l < ref.config().n_layer; ++l) {
    const ParamInfo& b = model.param("encoder.layer." + std::to_string(l) + ".attention.self.qkv.bias");
    for (std::size_t i = b.offset + static_cast<std::size_t>(C);
         i < b.offset + 2 * static_cast<std::size_t>(C); ++i)
      atol[i] = 10.0 * static_cast<double>(lr);
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto w = worst(got.data() + i, ref.final_params.data() + i, 1, 1e-4, atol[i]);
    ASSERT_LE(w.excess, 0.0) << "final param [" << i << "]: got " << w.got << " want " << w.want;
  }
}

}  // namespace
}  // namespace tt
