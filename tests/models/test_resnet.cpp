// ResNet model: presets and torchvision's parameter counts, names and decay flags, gradient readiness,
// determinism, eval mode, bad input.
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/rng.h"
#include "models/resnet/resnet.h"

namespace tt {
namespace {

Batch random_batch(const ResnetConfig& cfg, int B, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.B = B;
  b.images.resize(static_cast<std::size_t>(B * cfg.in_channels * cfg.image_size * cfg.image_size));
  for (float& x : b.images) x = static_cast<float>(rng.normal());
  for (int i = 0; i < B; ++i)
    b.targets.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(cfg.num_classes))));
  return b;
}

TEST(ResnetConfig, TorchvisionParameterCounts) {
  EXPECT_EQ(ResnetConfig::preset("resnet18").num_params(), 11689512u);
  EXPECT_EQ(ResnetConfig::preset("resnet50").num_params(), 25557032u);
  EXPECT_EQ(ResnetConfig::preset("resnet152").num_params(), 60192808u);
  // resnet18's BN layers: 20 of them with 4800 channels in all -> 9600 running-stat floats.
  EXPECT_EQ(ResnetConfig::preset("resnet18").num_buffers(), 9600u);
  EXPECT_FALSE(ResnetConfig::preset("resnet18").small_stem());
  EXPECT_TRUE(ResnetConfig::preset("resnet-small").small_stem());
  EXPECT_THROW(ResnetConfig::preset("resnet19"), InputError);
  for (const auto& p : ResnetConfig::presets()) EXPECT_GT(p.config.num_params(), 0u) << p.name;
  ResnetConfig bad = ResnetConfig::preset("resnet-tiny");
  bad.layers = {1, 0};
  EXPECT_THROW(bad.validate(), InputError);
}

TEST(Resnet, NamesDecayAndReadiness) {
  auto be = make_cpu_backend(2);
  ResnetConfig cfg = ResnetConfig::preset("resnet18");
  cfg.image_size = 32;
  cfg.num_classes = 10;
  cfg.stem = ResnetStem::ImageNet;
  Resnet model(*be, cfg, "resnet18");
  const auto& ps = model.params();
  EXPECT_EQ(ps.front().name, "conv1.weight");
  EXPECT_EQ(ps.back().name, "fc.bias");
  EXPECT_EQ(model.param("layer2.0.downsample.0.weight").shape, (std::vector<int64_t>{128, 64, 1, 1}));
  EXPECT_TRUE(model.param("layer1.0.conv1.weight").decay);
  EXPECT_TRUE(model.param("fc.weight").decay);
  EXPECT_FALSE(model.param("layer1.0.bn1.weight").decay);
  EXPECT_FALSE(model.param("fc.bias").decay);
  EXPECT_EQ(model.state_buffers().front().name, "bn1.running_mean");
  EXPECT_EQ(model.state_buffers().back().name, "layer4.1.bn2.running_var");

  model.init_params(1);
  model.zero_grad();
  const Batch b = random_batch(cfg, 4, 2);
  model.forward(b);
  std::vector<std::size_t> froms;
  model.backward([&](std::size_t from) { froms.push_back(from); });
  ASSERT_FALSE(froms.empty());
  EXPECT_EQ(froms.back(), 0u);
  EXPECT_EQ(froms.front(), model.param("fc.weight").offset);
  for (std::size_t i = 1; i < froms.size(); ++i) EXPECT_LT(froms[i], froms[i - 1]);
  EXPECT_EQ(froms.size(), 2u + 8u);  // fc, 8 blocks, stem
}

TEST(Resnet, SmallerBatchesAfterALargerOneMatch) {
  // A batch smaller than the reserved one may run other conv algorithms (oneDNN picks by shape) with
  // their own workspace needs; in evaluation mode each image's logits do not depend on the batch.
  auto be = make_cpu_backend(2);
  ResnetConfig cfg = ResnetConfig::preset("resnet-small");
  cfg.image_size = 16;
  Resnet model(*be, cfg);
  model.init_params(3);
  model.set_training(false);
  const Batch big = random_batch(cfg, 16, 5);
  model.evaluate(big);
  const std::vector<float> want(model.logits(), model.logits() + 16 * cfg.num_classes);  // (16, classes)
  for (int B : {1, 3}) {
    Batch small = big;
    small.B = B;
    small.images.resize(static_cast<std::size_t>(B * cfg.in_channels * cfg.image_size * cfg.image_size));
    small.targets.resize(static_cast<std::size_t>(B));
    model.evaluate(small);
    for (int i = 0; i < B * cfg.num_classes; ++i) {
      EXPECT_NEAR(model.logits()[i], want[static_cast<std::size_t>(i)], 1e-4) << "B=" << B << " logit " << i;
    }
  }
}

TEST(Resnet, DeterministicTrainingAndEval) {
  auto run = [] {
    auto be = make_cpu_backend(2);
    ResnetConfig cfg = ResnetConfig::preset("resnet-small");
    Resnet model(*be, cfg);
    model.init_params(7);
    std::vector<float> mom(model.num_params(), 0.0f);
    SgdConfig sgd;
    sgd.lr = 0.05f;
    std::vector<float> out;
    for (int step = 0; step < 3; ++step) {
      const Batch b = random_batch(cfg, 8, 100 + static_cast<uint64_t>(step));
      model.zero_grad();
      out.push_back(model.forward(b));
      model.backward(nullptr);
      be->sgd_update(model.param_data(), model.grad_data(), mom.data(), model.num_params(), sgd, 1.0f);
    }
    out.insert(out.end(), model.param_data(), model.param_data() + model.num_params());
    out.insert(out.end(), model.state_data(), model.state_data() + model.num_state_floats());
    model.set_training(false);
    const EvalCounts e = model.evaluate(random_batch(cfg, 8, 9));
    EXPECT_EQ(e.count, 8);
    EXPECT_GE(e.correct, 0);
    out.push_back(static_cast<float>(e.loss_sum));
    return out;
  };
  const auto a = run();
  const auto b = run();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  EXPECT_LT(a[2], a[0]);  // three steps on fresh batches of noise still move the loss... at least not NaN
}

TEST(Resnet, BadInput) {
  auto be = make_cpu_backend(1);
  const ResnetConfig cfg = ResnetConfig::preset("resnet-tiny");
  Resnet model(*be, cfg);
  model.init_params(1);
  Batch b = random_batch(cfg, 2, 3);
  b.images.pop_back();
  EXPECT_THROW(model.forward(b), InputError);
  b = random_batch(cfg, 2, 3);
  b.targets[1] = cfg.num_classes;
  EXPECT_THROW(model.forward(b), InputError);
  EXPECT_THROW(model.backward(nullptr), RunError);
  EXPECT_THROW(model.reserve(0), InputError);
}

}  // namespace
}  // namespace tt
