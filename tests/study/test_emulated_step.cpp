// The emulated GPU backend against teetrain's real CUDA steps: the real Gpt2 and Resnet run on an
// EmulatedBackend in Account mode (ops add up their seconds, nothing waits), and the sum is compared
// with the step times measured on an H200 (GPT-2 sizes, TF32 and FP32: tests/fixtures/
// gpu_size_sweep_h200) and on an H100 (ResNet-18/50/152 at 224 px, GPT-2: tests/fixtures/step_h100).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/emulated/emulated_backend.h"
#include "models/gpt2/gpt2.h"
#include "models/resnet/resnet.h"

namespace tt {
namespace {

nlohmann::json fixture(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << path << " missing (run the test from the source tree)";
  return f ? nlohmann::json::parse(f) : nlohmann::json{};
}

struct EmulatedStep {
  double forward = 0, backward = 0, optimizer = 0;
  double total() const { return forward + backward + optimizer; }
};

// One training step of `model` on `gpu`, costed op by op.
EmulatedStep cost_step(EmulatedBackend& be, Model& model, const Batch& batch, bool adamw) {
  EmulatedStep s;
  be.reset_seconds();
  model.forward(batch);
  s.forward = be.seconds();
  be.reset_seconds();
  model.zero_grad();
  model.backward({});
  s.backward = be.seconds();
  be.reset_seconds();
  const std::size_t n = model.num_params();
  if (adamw) {
    be.adamw_update(model.param_data(), model.grad_data(), nullptr, nullptr, n, AdamWConfig{}, 1.0f, 1);
  } else {
    be.sgd_update(model.param_data(), model.grad_data(), nullptr, n, SgdConfig{}, 1.0f);
  }
  s.optimizer = be.seconds();
  return s;
}

EmulatedStep gpt2_step(const EmulatedGpu& gpu, const std::string& name, int B, int T) {
  EmulatedBackend be(gpu, EmulatedBackend::Timing::Account, std::size_t{1} << 20);
  Gpt2 model(be, Gpt2Config::preset(name), name);
  Batch batch;
  batch.B = B;
  batch.T = T;
  batch.tokens.assign(static_cast<std::size_t>(B) * T, 0);
  batch.targets = batch.tokens;
  return cost_step(be, model, batch, true);
}

EmulatedStep resnet_step(const EmulatedGpu& gpu, const std::string& name, int B, int size) {
  EmulatedBackend be(gpu, EmulatedBackend::Timing::Account, std::size_t{1} << 20);
  ResnetConfig cfg = ResnetConfig::preset(name);
  cfg.image_size = size;
  Resnet model(be, cfg, name);
  Batch batch;
  batch.B = B;
  batch.images.assign(static_cast<std::size_t>(B) * cfg.in_channels * size * size, 0.0f);
  batch.targets.assign(static_cast<std::size_t>(B), 0);
  return cost_step(be, model, batch, false);
}

// The fixtures' file names spell the precision.
GpuPrecision precision_of(const std::string& p) {
  return p == "fp32" ? GpuPrecision::Fp32 : GpuPrecision::Tf32;
}

double measured_step(const nlohmann::json& m) {
  return m.at("forward_s").get<double>() + m.at("backward_s").get<double>() +
         m.at("optimizer_s").get<double>();
}

// The step-level model the emulation used before it ran the real model op by op (an EmulatedModel:
// FLOPs / (peak x 0.76) + 15 x activation bytes / (0.8 x HBM) for forward and backward, 28 bytes per
// parameter at 0.6 of HBM for AdamW), fitted at 4 x 1024 tokens.
double step_level_model(const EmulatedGpu& gpu, const std::string& name, int B, int T) {
  const Gpt2Config cfg = Gpt2Config::preset(name);
  const StepFlops fl = Gpt2::flops_for(cfg, B, T);
  const double act = static_cast<double>(Gpt2::activation_bytes_for(cfg, B, T));
  return (fl.forward + fl.backward) / (gpu.flops_per_second() / gpu.efficiency() * 0.76) +
         15.0 * act / (0.8 * gpu.spec.hbm_gbps * 1e9) +
         28.0 * static_cast<double>(cfg.num_params()) / (0.6 * gpu.spec.hbm_gbps * 1e9);
}

// The fit set of Note [Transformer kernel model]: GPT-2 sizes at 4 x 1024 and GPT-2 (124M) at 1,024 to
// 8,192 tokens per step, TF32 and FP32 on an H200. Every step within 12% (tools/fit_gpu_kernels.py: the
// largest miss is 11.7%; a cost per op fitted at 4 x 1024 alone missed TF32 1 x 1024 by 43%).
TEST(EmulatedStep, Gpt2MatchesTheMeasuredH200StepsAtEveryTokenCount) {
  const char* const sweep[] = {"b1_t1024", "b2_t1024", "b4_t256", "b4_t512", "b16_t256", "b8_t1024"};
  for (const char* precision : {"tf32", "fp32"}) {
    std::vector<double> mfu;
    std::vector<std::string> files;
    for (const char* name : {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"})
      files.push_back(std::string("tests/fixtures/gpu_size_sweep_h200/") + name + "-" + precision + ".json");
    for (const char* shape : sweep)
      files.push_back(std::string("tests/fixtures/gpu_token_sweep_h200/") + shape + "/gpt2-" + precision +
                      ".json");
    for (const std::string& file : files) {
      const nlohmann::json m = fixture(file);
      ASSERT_FALSE(m.empty()) << file;
      const std::string name = m.at("model").at("name").get<std::string>();
      const int B = m.at("batch").get<int>(), T = m.at("seq").get<int>();
      const EmulatedGpu gpu{gpu_spec("h200"), precision_of(precision)};
      const EmulatedStep e = gpt2_step(gpu, name, B, T);
      const double measured = measured_step(m), before = step_level_model(gpu, name, B, T);
      std::printf(
          "%-12s %s %2d x %4d  emulated %.4f s (fwd %.4f bwd %.4f opt %.4f)  measured %.4f s (x%.3f)  "
          "step-level model x%.3f\n",
          name.c_str(), precision, B, T, e.total(), e.forward, e.backward, e.optimizer, measured,
          e.total() / measured, before / measured);
      EXPECT_NEAR(e.total() / measured, 1.0, 0.12) << file;
      if (T == 1024 && B == 4) {
        const StepFlops fl = Gpt2::flops_for(Gpt2Config::preset(name), B, T);
        mfu.push_back((fl.forward + fl.backward) / (e.forward + e.backward));
      }
    }
    // Model-FLOP utilisation grows with size (the small models are bound by their many kernels).
    for (std::size_t i = 1; i < mfu.size(); ++i) EXPECT_GT(mfu[i], mfu[i - 1]) << precision;
  }
}

// The same figures on another card, not fitted to: teetrain's GPT-2 steps measured on an H100 (less
// HBM bandwidth than the H200). The op-level emulation is within 10% of them and closer than the
// earlier step-level model (which overestimates them by 11-16%).
TEST(EmulatedStep, Gpt2MatchesTheMeasuredH100Steps) {
  for (const char* name : {"gpt2", "gpt2-medium"}) {
    const nlohmann::json m = fixture(std::string("tests/fixtures/step_h100/") + name + "-tf32.json");
    ASSERT_FALSE(m.empty());
    const int B = m.at("batch").get<int>(), T = m.at("seq").get<int>();
    const EmulatedGpu gpu{gpu_spec("h100"), GpuPrecision::Tf32};
    const EmulatedStep e = gpt2_step(gpu, name, B, T);
    const double measured = measured_step(m), before = step_level_model(gpu, name, B, T);
    std::printf(
        "%-12s h100 tf32  emulated %.4f s  measured %.4f s (x%.3f)  earlier emulation %.4f s (x%.3f)\n", name,
        e.total(), measured, e.total() / measured, before, before / measured);
    EXPECT_NEAR(e.total() / measured, 1.0, 0.10) << name;
    EXPECT_LT(std::abs(e.total() / measured - 1.0), std::abs(before / measured - 1.0)) << name;
  }
}

// ResNets: on tensor cores (TF32) each implicit GEMM pays for the whole tiles its shape fills, which
// follows the H100 within 10%; exact FP32 has one efficiency (cuDNN's FP32 algorithms vary by shape),
// within 15%. In the right order of size, and TF32 faster than FP32.
TEST(EmulatedStep, ResnetFollowsTheMeasuredH100Steps) {
  for (const char* precision : {"tf32", "fp32"}) {
    double last = 0;
    for (const char* name : {"resnet18", "resnet50", "resnet152"}) {
      const nlohmann::json m =
          fixture(std::string("tests/fixtures/step_h100/") + name + "-" + precision + ".json");
      ASSERT_FALSE(m.empty());
      const EmulatedStep e = resnet_step(EmulatedGpu{gpu_spec("h100"), precision_of(precision)}, name,
                                         m.at("batch").get<int>(), 224);
      const double measured = measured_step(m);
      std::printf("%-12s %s  emulated %.4f s (fwd %.4f bwd %.4f opt %.4f)  measured %.4f s (x%.3f)\n", name,
                  precision, e.total(), e.forward, e.backward, e.optimizer, measured, e.total() / measured);
      EXPECT_NEAR(e.total() / measured, 1.0, std::string(precision) == "tf32" ? 0.10 : 0.15)
          << name << " " << precision;
      EXPECT_GT(e.total(), last) << name;
      last = e.total();
      if (std::string(precision) == "tf32") {
        const EmulatedStep exact =
            resnet_step(EmulatedGpu{gpu_spec("h100"), GpuPrecision::Fp32}, name, 32, 224);
        EXPECT_LT(e.total(), exact.total()) << name;
      }
    }
  }
}

}  // namespace
}  // namespace tt
