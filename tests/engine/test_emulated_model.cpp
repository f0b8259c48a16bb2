// Emulated GPU compute: waits follow the FLOP formula, readiness signals walk down like the real
// model's, and the gradient buffer (real or aliased) has the full size. Timing checks are lower
// bounds only (a busy machine may wake late, never early), so they cannot flake.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "engine/core/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/emulated_model.h"

namespace tt {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<ParamInfo> toy_table(std::size_t* total) {
  std::vector<ParamInfo> t;
  std::size_t off = 0;
  auto add = [&](const std::string& name, std::size_t n) {
    t.push_back({name, {static_cast<int64_t>(n)}, off, n, false});
    off += n;
  };
  add("wte", 4000);
  add("wpe", 1000);
  for (int l = 0; l < 3; ++l) {
    add("h." + std::to_string(l) + ".attn.weight", 3000);
    add("h." + std::to_string(l) + ".attn.bias", 30);
  }
  add("ln_f.weight", 10);
  add("ln_f.bias", 10);
  *total = off;
  return t;
}

EmulatedModelConfig toy_config(std::size_t backing = 0) {
  EmulatedModelConfig c;
  c.name = "toy";
  c.params = toy_table(&c.num_params);
  // 1 ms forward and 2 ms backward per sample-token at 1 TFLOP/s x 1.0.
  c.flops = [](int B, int T) { return StepFlops{1e9 * B * T, 2e9 * B * T}; };
  c.gpu.spec = gpu_spec("h100");
  c.gpu.tflops_override = 1.0;
  c.gpu.efficiency_override = 1.0;
  c.grad_backing_bytes = backing;
  return c;
}

Batch batch(int B, int T) {
  Batch b;
  b.B = B;
  b.T = T;
  return b;
}

TEST(EmulatedGpu, TableAndOverrides) {
  EXPECT_EQ(gpu_specs().size(), 4u);
  EmulatedGpu g{gpu_spec("h100"), "bf16"};
  EXPECT_NEAR(g.flops_per_second(), 989.4e12 * 0.76, 1e9);
  // Activations: 5 bytes of traffic per byte at 80% of 3.35 TB/s, 2-byte activations in bf16.
  EXPECT_NEAR(g.activation_seconds(1e9), 1e9 * 5.0 * 0.5 / (3350e9 * 0.8), 1e-12);
  g.precision = "tf32";
  EXPECT_NEAR(g.flops_per_second(), 494.7e12 * 0.76, 1e9);
  EXPECT_NEAR(g.activation_seconds(1e9), 1e9 * 5.0 / (3350e9 * 0.8), 1e-12);
  g.act_traffic_override = 0;
  EXPECT_EQ(g.activation_seconds(1e9), 0.0);
  g.act_traffic_override = 2;
  EXPECT_NEAR(g.activation_seconds(1e9), 1e9 * 2.0 / (3350e9 * 0.8), 1e-12);
  g.efficiency_override = 0.5;
  g.tflops_override = 100;
  EXPECT_NEAR(g.flops_per_second(), 50e12, 1.0);
  EXPECT_THROW(gpu_spec("tpu"), InputError);
  g.precision = "int4";
  g.tflops_override = 0;
  EXPECT_THROW((void)g.flops_per_second(), InputError);
}

TEST(EmulatedModel, LayerGroupsFollowLayerNames) {
  std::size_t total = 0;
  const auto t = toy_table(&total);
  const auto g = layer_groups(t, total);
  ASSERT_EQ(g.size(), 6u);  // wte, wpe, h.0, h.1, h.2, ln_f
  EXPECT_EQ(g[0].begin, 0u);
  EXPECT_EQ(g[2].begin, 5000u);
  EXPECT_EQ(g[2].end, 8030u);
  EXPECT_EQ(g.back().end, total);
}

TEST(EmulatedModel, WaitsAtLeastTheFormulaAndSignalsDownward) {
  auto backend = make_cpu_backend(1);
  EmulatedModel m(*backend, toy_config());
  EXPECT_DOUBLE_EQ(m.forward_seconds(2, 3), 6e-3);
  EXPECT_DOUBLE_EQ(m.backward_seconds(2, 3), 12e-3);
  // Activation bytes add their HBM time: forward once, backward twice.
  EmulatedModelConfig withacts = toy_config();
  withacts.activation_bytes = [](int B, int T) { return 1e6 * B * T; };  // 6 MB for 2 x 3
  EmulatedModel ma(*backend, withacts);
  const double act = withacts.gpu.activation_seconds(6e6);
  EXPECT_GT(act, 0.0);
  EXPECT_DOUBLE_EQ(ma.forward_seconds(2, 3), 6e-3 + act);
  EXPECT_DOUBLE_EQ(ma.backward_seconds(2, 3), 12e-3 + 2 * act);

  auto t0 = Clock::now();
  EXPECT_FLOAT_EQ(m.forward(batch(2, 3)), 10.0f);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 6e-3);

  std::vector<std::size_t> ready;
  t0 = Clock::now();
  m.backward([&](std::size_t from) { ready.push_back(from); });
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 12e-3);
  ASSERT_EQ(ready.size(), m.groups().size());
  for (std::size_t i = 1; i < ready.size(); ++i) EXPECT_LT(ready[i], ready[i - 1]);
  EXPECT_EQ(ready.back(), 0u);
  EXPECT_EQ(ready.front(), m.groups().back().begin);
}

TEST(EmulatedModel, RealBufferHasADeterministicPattern) {
  auto backend = make_cpu_backend(1);
  EmulatedModel m(*backend, toy_config());
  EXPECT_FALSE(m.grads_aliased());
  EXPECT_EQ(m.param_data(), m.grad_data());
  const float* g = m.grad_data();
  double sum_abs = 0;
  for (std::size_t i = 0; i < m.num_params(); ++i) sum_abs += std::abs(g[i]);
  EXPECT_GT(sum_abs, 0.0);
  EmulatedModel m2(*backend, toy_config());
  for (std::size_t i = 0; i < m.num_params(); i += 97) EXPECT_EQ(g[i], m2.grad_data()[i]);
  EXPECT_THROW(EmulatedModel(*backend, toy_config()).backward({}), RunError);
}

TEST(EmulatedModel, AliasedBufferSpansAllParametersOnASmallBlock) {
  auto backend = make_cpu_backend(1);
  EmulatedModelConfig c = toy_config();
  c.num_params = std::size_t{4} << 20;  // 16 MiB of floats on a 1 MiB block
  c.params.back().numel = c.num_params - c.params.back().offset;
  c.grad_backing_bytes = std::size_t{1} << 20;
  EmulatedModel m(*backend, c);
  ASSERT_TRUE(m.grads_aliased());
  float* g = m.grad_data();
  EXPECT_EQ(g[c.num_params - 1], 0.0f);  // the whole range is mapped and readable
  g[5] = 3.0f;                           // ... and every MiB is the same block
  EXPECT_EQ(g[5 + (std::size_t{1} << 18)], 3.0f);
  EXPECT_EQ(g[c.num_params - (std::size_t{1} << 18) + 5], 3.0f);
  g[5] = 0.0f;
  EXPECT_EQ(default_grad_backing_bytes(1000), 0u);
  EXPECT_EQ(default_grad_backing_bytes(std::size_t{774} << 20), std::size_t{64} << 20);
}

TEST(EmulatedOptimizer, WaitsForTheHbmTime) {
  EmulatedGpu g{gpu_spec("v100"), "bf16"};
  EmulatedOptimizer opt(std::size_t{100} << 20, g);
  const double s = opt.step_seconds();  // 2.9 GB at 720 GB/s: ~4 ms
  EXPECT_GT(s, 3e-3);
  auto backend = make_cpu_backend(1);
  EmulatedModel m(*backend, toy_config());
  const auto t0 = Clock::now();
  opt.step(m, 1e-3f, 1.0f, 1);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), s);
  EXPECT_EQ(opt.state_floats(), 0u);
}

}  // namespace
}  // namespace tt
