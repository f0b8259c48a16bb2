// ResNet against the PyTorch references in tests/fixtures/resnet_tiny (see
// tools/fixtures/make_resnet_fixtures.py for the format and how to regenerate it): both cases, basic
// blocks with the small stem (preset resnet-tiny) and bottleneck blocks with the ImageNet stem + maxpool.
//
// Tolerances (the reference is float64 arithmetic on the same float32 values, so these bound our float32
// rounding, amplified by batch norm's division by small batch standard deviations):
//   logits (train and eval)  |got - want| <= 1e-4 + 1e-4 |want|
//   loss                     relative 1e-5
//   gradients                per tensor: |got - want| <= 1e-3 * max|want of that tensor| + 1e-3 |want|
//   running statistics       |got - want| <= 1e-5 + 1e-5 |want|
//   SGD losses               relative 1e-4 at each of the 5 steps
//   final params / stats     |got - want| <= 1e-4 + 1e-3 |want|
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "models/resnet/resnet.h"

namespace tt {
namespace {

struct Mismatch {
  double excess = -1e300;
  std::size_t index = 0;
  double got = 0, want = 0;
};
Mismatch worst(const float* got, const float* want, std::size_t n, double rtol, double atol) {
  Mismatch m;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    const double e = std::isfinite(g) ? std::abs(g - w) - (atol + rtol * std::abs(w)) : 1e300;
    if (e > m.excess) m = {e, i, g, w};
  }
  return m;
}

class Fixture {
 public:
  explicit Fixture(std::string c) : dir_("tests/fixtures/resnet_tiny/" + std::move(c) + "/") {
    std::ifstream f(dir_ + "manifest.json");
    EXPECT_TRUE(f.good()) << "missing fixture " << dir_ << "manifest.json";
    manifest = nlohmann::json::parse(f);
  }
  template <typename T>
  std::vector<T> bin(const std::string& name) const {
    std::ifstream f(dir_ + name, std::ios::binary);
    EXPECT_TRUE(f.good()) << "missing fixture " << dir_ << name;
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
  ResnetConfig config() const {
    const auto& c = manifest.at("config");
    ResnetConfig cfg;
    cfg.block = c.at("block").get<std::string>() == "basic" ? ResnetBlock::Basic : ResnetBlock::Bottleneck;
    cfg.layers = c.at("layers").get<std::vector<int>>();
    cfg.width = c.at("width").get<int>();
    cfg.in_channels = c.at("in_channels").get<int>();
    cfg.image_size = c.at("image_size").get<int>();
    cfg.num_classes = c.at("num_classes").get<int>();
    cfg.stem = c.at("small_stem").get<bool>() ? ResnetStem::Small : ResnetStem::ImageNet;
    return cfg;
  }
  Batch batch() const {
    Batch b;
    b.B = manifest.at("B").get<int>();
    b.images = bin<float>("images.bin");
    b.targets = bin<int32_t>("labels.bin");
    return b;
  }
  nlohmann::json manifest;

 private:
  std::string dir_;
};

std::vector<float> to_host(Backend& be, const float* p, std::size_t n) {
  std::vector<float> h(n);
  be.copy_to_host(h.data(), p, n * sizeof(float));
  return h;
}

// Compares a flat buffer tensor by tensor (by name), with a per-tensor absolute floor.
void expect_tables_match(const std::vector<ParamInfo>& ours, const nlohmann::json& table,
                         const std::vector<float>& got, const std::vector<float>& want, double rtol,
                         double atol_rel, double atol, const std::string& what) {
  ASSERT_EQ(ours.size(), table.size()) << what;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const auto& t = table[i];
    ASSERT_EQ(ours[i].name, t.at("name").get<std::string>()) << what;
    ASSERT_EQ(ours[i].offset, t.at("offset").get<std::size_t>()) << ours[i].name;
    const std::size_t n = ours[i].numel;
    const float* w = want.data() + ours[i].offset;
    double scale = 0;
    for (std::size_t j = 0; j < n; ++j) scale = std::max(scale, std::abs(static_cast<double>(w[j])));
    const auto m = worst(got.data() + ours[i].offset, w, n, rtol, atol + atol_rel * scale);
    EXPECT_LE(m.excess, 0.0) << what << " " << ours[i].name << "[" << m.index << "]: got " << m.got
                             << " want " << m.want << " (tensor max " << scale << ")";
  }
}

class ResnetFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ResnetFixture, MatchesPyTorch) {
  const Fixture fx(GetParam());
  auto be = make_cpu_backend(2);
  Resnet model(*be, fx.config());
  const auto& mp = fx.manifest.at("params");
  ASSERT_EQ(model.num_params(), fx.manifest.at("num_params").get<std::size_t>());
  ASSERT_EQ(model.num_state_floats(), fx.manifest.at("num_buffers").get<std::size_t>());
  for (std::size_t i = 0; i < mp.size(); ++i) {
    EXPECT_EQ(model.params()[i].shape, mp[i].at("shape").get<std::vector<int64_t>>())
        << model.params()[i].name;
    EXPECT_EQ(model.params()[i].decay, mp[i].at("decay").get<bool>()) << model.params()[i].name;
  }
  const auto params = fx.bin<float>("params.bin");
  const auto buffers = fx.bin<float>("buffers.bin");
  be->copy_to_device(model.param_data(), params.data(), params.size() * sizeof(float));
  be->copy_to_device(model.state_data(), buffers.data(), buffers.size() * sizeof(float));
  const Batch batch = fx.batch();
  const int K = model.config().num_classes;

  model.zero_grad();
  const float loss = model.forward(batch);
  EXPECT_NEAR(loss, fx.manifest.at("loss").get<double>(), 1e-5 * fx.manifest.at("loss").get<double>());
  const auto logits = to_host(*be, model.logits(), static_cast<std::size_t>(batch.B * K));
  const auto want_logits = fx.bin<float>("logits.bin");
  auto m = worst(logits.data(), want_logits.data(), logits.size(), 1e-4, 1e-4);
  EXPECT_LE(m.excess, 0.0) << "logits[" << m.index << "] got " << m.got << " want " << m.want;
  expect_tables_match(model.state_buffers(), fx.manifest.at("buffers"),
                      to_host(*be, model.state_data(), model.num_state_floats()),
                      fx.bin<float>("buffers_after.bin"), 1e-5, 0.0, 1e-5, "running stats");
  model.backward(nullptr);
  expect_tables_match(model.params(), mp, to_host(*be, model.grad_data(), model.num_params()),
                      fx.bin<float>("grads.bin"), 1e-3, 1e-3, 0.0, "grad");

  // SGD with momentum on the same batch, through the backend's optimizer.
  const auto& sgd = fx.manifest.at("sgd");
  SgdConfig cfg;
  cfg.lr = sgd.at("lr").get<float>();
  cfg.momentum = sgd.at("momentum").get<float>();
  cfg.weight_decay = 0.0f;
  std::vector<float> mom(model.num_params(), 0.0f);
  const auto losses = fx.manifest.at("sgd_losses").get<std::vector<double>>();
  for (std::size_t step = 0; step < losses.size(); ++step) {
    model.zero_grad();
    const float l = model.forward(batch);
    EXPECT_NEAR(l, losses[step], 1e-4 * losses[step]) << "sgd step " << step;
    model.backward(nullptr);
    be->sgd_update(model.param_data(), model.grad_data(), mom.data(), model.num_params(), cfg, 1.0f);
  }
  expect_tables_match(model.params(), mp, to_host(*be, model.param_data(), model.num_params()),
                      fx.bin<float>("final_params.bin"), 1e-3, 0.0, 1e-4, "final param");
  expect_tables_match(model.state_buffers(), fx.manifest.at("buffers"),
                      to_host(*be, model.state_data(), model.num_state_floats()),
                      fx.bin<float>("final_buffers.bin"), 1e-3, 0.0, 1e-4, "final running stats");

  // Evaluation mode: running statistics, not updated.
  model.set_training(false);
  const auto before = to_host(*be, model.state_data(), model.num_state_floats());
  const std::vector<int32_t> cls = model.predict(batch);
  const auto eval_logits = to_host(*be, model.logits(), static_cast<std::size_t>(batch.B * K));
  const auto want_eval = fx.bin<float>("eval_logits.bin");
  m = worst(eval_logits.data(), want_eval.data(), eval_logits.size(), 1e-3, 1e-4);
  EXPECT_LE(m.excess, 0.0) << "eval logits[" << m.index << "] got " << m.got << " want " << m.want;
  EXPECT_EQ(to_host(*be, model.state_data(), model.num_state_floats()), before);
  ASSERT_EQ(cls.size(), static_cast<std::size_t>(batch.B));
  for (int b = 0; b < batch.B; ++b) {
    const float* row = want_eval.data() + b * K;
    EXPECT_EQ(cls[static_cast<std::size_t>(b)], std::max_element(row, row + K) - row);
  }
  EXPECT_THROW(model.backward(nullptr), RunError);
}

INSTANTIATE_TEST_SUITE_P(Cases, ResnetFixture, ::testing::Values("basic", "bottleneck"));

}  // namespace
}  // namespace tt
