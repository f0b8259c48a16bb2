// The emulated GPU backend: the GPU table, op costs from shapes, waits on its streams, aliased
// memory that keeps holding zeros. Timing checks are lower bounds only (a busy machine may wake
// late, never early), so they cannot flake.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/error.h"
#include "core/backend_factory.h"
#include "core/buffer.h"
#include "core/emulated/emulated_backend.h"
#include "core/emulated/virtual_clock.h"

namespace tt {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// 1 TFLOP/s x 1.0: a matmul of N x IC x OC costs 2 N IC OC ps, plus the transformer kernel's fixed cost.
EmulatedGpu slow_gpu() {
  EmulatedGpu g{gpu_spec("h100"), GpuPrecision::Tf32};
  g.tflops_override = 1.0;
  g.efficiency_override = 1.0;
  return g;
}

TEST(EmulatedGpu, TableAndOverrides) {
  EXPECT_EQ(gpu_specs().size(), 4u);
  EmulatedGpu g{gpu_spec("h100"), GpuPrecision::Bf16};
  EXPECT_NEAR(g.flops_per_second(), 989.4e12 * kMeasuredMatmulEfficiency, 1e9);
  EXPECT_NEAR(g.conv_flops_per_second(), 989.4e12 * kMeasuredConvEfficiency, 1e9);
  // Element-wise: the measured traffic factor at 80% of 3.35 TB/s, 2-byte activations in bf16.
  EXPECT_NEAR(g.elementwise_seconds(1e9), 1e9 * kMeasuredActTraffic * 0.5 / (3350e9 * 0.8), 1e-12);
  g.precision = GpuPrecision::Tf32;
  EXPECT_NEAR(g.flops_per_second(), 494.7e12 * kMeasuredMatmulEfficiency, 1e9);
  EXPECT_NEAR(g.elementwise_seconds(1e9), 1e9 * kMeasuredActTraffic / (3350e9 * 0.8), 1e-12);
  g.precision = GpuPrecision::Fp32;
  EXPECT_NEAR(g.conv_flops_per_second(), 67e12 * kMeasuredConvEfficiencyFp32, 1e9);
  // The description names the convolutions' figure that applies: exact FP32 has its own.
  EXPECT_NE(g.describe().find("(conv x 0.21)"), std::string::npos) << g.describe();
  g.precision = GpuPrecision::Tf32;
  EXPECT_NE(g.describe().find("(conv x 0.13)"), std::string::npos) << g.describe();
  g.precision = GpuPrecision::Fp32;
  g.act_traffic_override = 0;
  EXPECT_EQ(g.elementwise_seconds(1e9), 0.0);
  g.act_traffic_override = 2;
  EXPECT_NEAR(g.elementwise_seconds(1e9), 1e9 * 2.0 / (3350e9 * 0.8), 1e-12);
  EXPECT_NEAR(g.optimizer_seconds(1e9), 1e9 / (3350e9 * 0.6), 1e-12);
  g.efficiency_override = 0.5;
  g.tflops_override = 100;
  EXPECT_NEAR(g.flops_per_second(), 50e12, 1.0);
  EXPECT_THROW(gpu_spec("tpu"), InputError);
  g.tflops_override = 0;
  g.efficiency_override = 1.5;  // more than the peak
  EXPECT_THROW((void)g.flops_per_second(), InputError);
  EXPECT_THROW({ EmulatedBackend b(g); }, InputError);  // refused when built, not in the middle of a run
}

TEST(EmulatedBackend, OpsCostWhatTheirShapesSay) {
  EmulatedBackend be(slow_gpu(), EmulatedBackend::Timing::Account);
  EXPECT_EQ(be.kind(), DeviceKind::Emulated);
  be.matmul_forward(nullptr, nullptr, nullptr, nullptr, 1000, 500, 100);  // 1e8 FLOPs: 100 us, one launch
  EXPECT_NEAR(be.seconds(EmulatedWork::Matmul), 1e-4, 1e-9);
  EXPECT_NEAR(be.seconds(EmulatedWork::Launches), kMeasuredRowKernelSeconds, 1e-12);
  be.matmul_backward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1000, 500, 100);  // no grads asked
  EXPECT_NEAR(be.seconds(EmulatedWork::Matmul), 1e-4, 1e-9);
  EXPECT_EQ(be.kernels(), 1);  // no GEMM, no launch
  float g = 0;
  be.reset_seconds();
  be.matmul_backward(&g, &g, nullptr, nullptr, nullptr, nullptr, 1000, 500, 100);  // dinp and dweight
  EXPECT_NEAR(be.seconds(EmulatedWork::Matmul), 2e-4, 1e-9);
  EXPECT_EQ(be.kernels(), 2);  // two GEMMs
  // Element-wise: floats read + written; a conv at the conv efficiency; AdamW 28 bytes per parameter.
  be.reset_seconds();
  be.relu_forward(nullptr, nullptr, 1000000);
  EXPECT_NEAR(be.seconds(), be.gpu().elementwise_seconds(8e6), 1e-12);
  be.reset_seconds();
  Conv2dShape s{8, 16, 32, 32, 32, 3, 3, 1, 1};
  be.conv2d_forward(nullptr, nullptr, nullptr, nullptr, nullptr, s);
  EXPECT_NEAR(be.seconds(), 2.0 * 8 * 32 * 32 * 32 * 16 * 9 / be.gpu().conv_flops_per_second(), 1e-12);
  be.reset_seconds();
  be.adamw_update(nullptr, nullptr, nullptr, nullptr, 1000, AdamWConfig{}, 1.0f, 1);
  EXPECT_NEAR(be.seconds(EmulatedWork::Optimizer), be.gpu().optimizer_seconds(28e3), 1e-15);
  // Batch norm with fewer channels than SMs runs on fewer SMs (one block per channel in our kernel).
  be.reset_seconds();
  be.batchnorm_forward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 66, 100,
                       0.1f, 1e-5f, true);
  EXPECT_NEAR(be.seconds(), be.gpu().elementwise_seconds(3.0 * 4 * 66 * 100 * 4) * 2.0, 1e-12);
}

// On tensor cores a convolution's implicit GEMMs are charged the whole 128 x 256 tiles covering their
// output: ResNet's first-stage 3x3 conv (64 -> 64 channels, 56 x 56, batch 32) fills a quarter of
// each tile's 256 columns in all three GEMMs, so it costs 4x its FLOPs; exact FP32 costs its FLOPs.
// The Llama ops: each row kernel charged from the floats it moves; grouped attention with one query head per
// key/value head costs what attention_forward/backward do, and sharing key/value heads moves fewer floats
// for the same FLOPs.
TEST(EmulatedBackend, LlamaOpsCostTheFloatsTheyMove) {
  EmulatedBackend be(slow_gpu(), EmulatedBackend::Timing::Account);
  const double row = kMeasuredRowKernelSeconds;
  auto floats = [&be](double n) {
    return be.gpu().elementwise_seconds(n * sizeof(float), kMeasuredRowTraffic);
  };
  be.rmsnorm_forward(nullptr, nullptr, nullptr, nullptr, 100, 64, 1e-5f);
  EXPECT_NEAR(be.seconds(), row + floats(2.0 * 100 * 64 + 100), 1e-12);
  be.reset_seconds();
  be.swiglu_backward(nullptr, nullptr, nullptr, 100, 96);
  EXPECT_NEAR(be.seconds(), row + floats(7.0 * 100 * 96), 1e-12);
  be.reset_seconds();
  be.rope_forward(nullptr, 2, 50, 512, 6, 64, 10000.0f);
  EXPECT_NEAR(be.seconds(), row + floats(2.0 * 100 * 6 * 64), 1e-12);

  auto cost = [&be](auto op) {
    be.reset_seconds();
    op();
    return std::pair{be.seconds(EmulatedWork::Attention), be.seconds(EmulatedWork::Rows)};
  };
  const auto mha =
      cost([&] { be.attention_forward(nullptr, nullptr, nullptr, 2, 64, 256, 4, AttentionMask::Causal); });
  const auto same = cost(
      [&] { be.gqa_attention_forward(nullptr, nullptr, nullptr, 2, 64, 4, 4, 64, AttentionMask::Causal); });
  const auto grouped = cost(
      [&] { be.gqa_attention_forward(nullptr, nullptr, nullptr, 2, 64, 4, 1, 64, AttentionMask::Causal); });
  EXPECT_EQ(mha, same);
  EXPECT_EQ(grouped.first, mha.first);
  EXPECT_LT(grouped.second, mha.second);
  const auto mha_b = cost([&] {
    be.attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, 2, 64, 256, 4, AttentionMask::Causal);
  });
  const auto grouped_b = cost([&] {
    be.gqa_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, 2, 64, 4, 1, 64,
                              AttentionMask::Causal);
  });
  EXPECT_EQ(grouped_b.first, mha_b.first);
  EXPECT_LT(grouped_b.second, mha_b.second);
}

TEST(EmulatedBackend, TensorCoreConvolutionsPayForWholeTiles) {
  const Conv2dShape s{32, 64, 56, 56, 64, 3, 3, 1, 1};
  const double M = 32.0 * 56 * 56, K = 64.0 * 9, flops = 2.0 * M * 64 * K;  // M: 784 whole tiles of 128
  float g = 0;
  EmulatedBackend tf32(EmulatedGpu{gpu_spec("h100"), GpuPrecision::Tf32}, EmulatedBackend::Timing::Account);
  tf32.conv2d_forward(nullptr, nullptr, nullptr, nullptr, nullptr, s);
  const double rate = tf32.gpu().conv_flops_per_second();
  EXPECT_NEAR(tf32.seconds(EmulatedWork::Conv), 4.0 * flops / rate, 1e-12);
  tf32.reset_seconds();
  // Input gradient (M = 32*56*56, N = 64) and weight gradient (M = 64, N = 576: 3 tiles of 256 for 576).
  tf32.conv2d_backward(&g, &g, nullptr, nullptr, nullptr, nullptr, nullptr, s);
  const double wgrad = 2.0 * 128 * 768 * M;
  EXPECT_NEAR(tf32.seconds(EmulatedWork::Conv), (4.0 * flops + wgrad) / rate, 1e-12);
  EmulatedBackend fp32(EmulatedGpu{gpu_spec("h100"), GpuPrecision::Fp32}, EmulatedBackend::Timing::Account);
  fp32.conv2d_backward(&g, &g, nullptr, nullptr, nullptr, nullptr, nullptr, s);
  EXPECT_NEAR(fp32.seconds(EmulatedWork::Conv), 2.0 * flops / fp32.gpu().conv_flops_per_second(), 1e-12);
  // A strided conv's input gradient has the forward's FLOPs (its K shrinks by the stride squared).
  const Conv2dShape down{32, 64, 56, 56, 128, 1, 1, 2, 0};
  fp32.reset_seconds();
  fp32.conv2d_backward(&g, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, down);
  EXPECT_NEAR(fp32.seconds(EmulatedWork::Conv),
              2.0 * 32 * 28 * 28 * 128 * 64 / fp32.gpu().conv_flops_per_second(), 1e-12);
}

// A host profile's element-wise ops beyond its cache (zero grad and the gradient norm over the
// parameters) run at the rate measured from memory, smaller ones at the cache-resident rate.
TEST(EmulatedBackend, ParameterSizedElementwiseOpsRunFromMemory) {
  GpuSpec host = gpu_spec("h100");
  host.hbm_gbps = 100.0 / 0.8;  // the cache-resident rate: 100 GB/s
  host.act_traffic = 1.0;
  host.cache_bytes = 1 << 20;
  host.memory_gbps = 20.0;
  EmulatedBackend be(EmulatedGpu{host, GpuPrecision::Fp32}, EmulatedBackend::Timing::Account);
  be.fill(nullptr, 0.0f, 3290624);  // zero grad of gpt2-mini's 3.3 M parameters: 13 MB written
  EXPECT_NEAR(be.seconds(), 3290624.0 * 4 / 20e9, 1e-12);
  be.reset_seconds();
  be.add(nullptr, nullptr, nullptr, 65536);  // an activation-sized add: 786 KB, within the cache
  EXPECT_NEAR(be.seconds(), 3.0 * 65536 * 4 / 100e9, 1e-12);
  host.cache_bytes = 0;  // the table's GPUs: one rate at every size
  EmulatedBackend gpu(EmulatedGpu{host, GpuPrecision::Fp32}, EmulatedBackend::Timing::Account);
  gpu.fill(nullptr, 0.0f, 3290624);
  EXPECT_NEAR(gpu.seconds(), 3290624.0 * 4 / 100e9, 1e-12);
  host.memory_gbps = -1;
  EXPECT_THROW(validate_gpu_spec(host), InputError);
}

// Note [Transformer kernel model]: attention is charged the kernels the CUDA backend launches (a batched
// GEMM call per sequence and query head of a group: 2 B G forward, 4 B G backward, and the softmax), its
// GEMMs' FLOPs at the attention efficiency and its (B, NH, T, T) scores at their own traffic. The same
// 4,096 tokens as 16 sequences of 256 launch four times the GEMM calls of 4 x 1024 and move a quarter of
// the scores' bytes.
TEST(EmulatedBackend, AttentionIsChargedItsLaunchesAndScoresAtItsShapes) {
  EmulatedBackend be(EmulatedGpu{gpu_spec("h200"), GpuPrecision::Tf32}, EmulatedBackend::Timing::Account);
  auto forward = [&be](int B, int T, int NH, int NKV) {
    be.reset_seconds();
    be.gqa_attention_forward(nullptr, nullptr, nullptr, B, T, NH, NKV, 64, AttentionMask::Causal);
    return be.kernels();
  };
  EXPECT_EQ(forward(4, 1024, 12, 12), 2 * 4 + 1);
  const double scores = be.seconds(EmulatedWork::Scores);
  EXPECT_NEAR(scores, be.gpu().elementwise_seconds(4.0 * 4 * 12 * 1024 * 1024 * 4, kMeasuredScoresTraffic),
              1e-12);
  EXPECT_NEAR(be.seconds(EmulatedWork::Attention),
              4.0 * 4096 * 1024 * 12 * 64 / be.gpu().attention_flops_per_second(), 1e-12);
  EXPECT_EQ(forward(16, 256, 12, 12), 2 * 16 + 1);
  EXPECT_NEAR(be.seconds(EmulatedWork::Scores), scores / 4, 1e-12);
  EXPECT_EQ(forward(4, 512, 9, 3), 2 * 4 * 3 + 1);  // SmolLM2's groups of three query heads
  be.reset_seconds();
  be.gqa_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, 4, 512, 9, 3, 64,
                            AttentionMask::Causal);
  EXPECT_EQ(be.kernels(), 4 * 4 * 3 + 1);
}

// Note [Fused attention baseline]: one kernel's FLOPs over the unmasked half of a causal mask (all of a
// bidirectional one), at the fused efficiency of the FP32 peak even under TF32; no scores, no batched
// GEMMs; the same rows; 2 launches forward, 3 backward.
TEST(EmulatedBackend, FusedAttentionBaselineIsOneKernelAtItsFlops) {
  EmulatedGpu g{gpu_spec("h200"), GpuPrecision::Tf32};
  EmulatedBackend ours(g, EmulatedBackend::Timing::Account);
  g.baseline = GpuBaseline::FusedAttention;
  EmulatedBackend be(g, EmulatedBackend::Timing::Account);
  EXPECT_NEAR(g.fused_attention_flops_per_second(), 67e12 * kMeasuredFusedAttentionEfficiency, 1e6);
  const double flops = 4.0 * 4096 * 1024 * 12 * 64;  // Q K^T and att V, every block
  be.gqa_attention_forward(nullptr, nullptr, nullptr, 4, 1024, 12, 12, 64, AttentionMask::Causal);
  ours.gqa_attention_forward(nullptr, nullptr, nullptr, 4, 1024, 12, 12, 64, AttentionMask::Causal);
  EXPECT_EQ(be.kernels(), 2);
  EXPECT_NEAR(be.seconds(EmulatedWork::FusedAttention), 0.5 * flops / g.fused_attention_flops_per_second(),
              1e-12);
  EXPECT_EQ(be.seconds(EmulatedWork::Scores), 0.0);
  EXPECT_EQ(be.seconds(EmulatedWork::Attention), 0.0);
  EXPECT_EQ(be.seconds(EmulatedWork::Rows), ours.seconds(EmulatedWork::Rows));
  EXPECT_LT(be.seconds(), ours.seconds() / 2);  // gpt2's shapes: the scores dominate materialised attention
  be.reset_seconds();
  be.gqa_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, 4, 1024, 12, 12, 64,
                            AttentionMask::Bidirectional);
  EXPECT_EQ(be.kernels(), 3);
  EXPECT_NEAR(be.seconds(EmulatedWork::FusedAttention), 2.5 * flops / g.fused_attention_flops_per_second(),
              1e-12);
  // BF16 takes the tensor-core peak; the override replaces the efficiency; and one outside (0, 1] is refused.
  g.precision = GpuPrecision::Bf16;
  EXPECT_NEAR(g.fused_attention_flops_per_second(), 989.4e12 * kMeasuredFusedAttentionEfficiency, 1e6);
  g.fused_efficiency_override = 0.25;
  EXPECT_NEAR(g.fused_attention_flops_per_second(), 989.4e12 * 0.25, 1e6);
  EXPECT_NE(g.describe().find("baseline fused-attention"), std::string::npos) << g.describe();
  g.fused_efficiency_override = 1.5;
  EXPECT_THROW((void)g.fused_attention_flops_per_second(), InputError);
  EXPECT_EQ(EmulatedGpu{gpu_spec("h200")}.describe().find("baseline"), std::string::npos);
}

// The kernel groups `bench emulated-step --kernel-groups` lists (tools/fit_gpu_kernels.py replays them):
// each launches() call with the work charged before it, and each plain op alone; together they are
// every second and every launch charged.
TEST(EmulatedBackend, KernelGroupsHoldEachOpsLaunchesWithItsWork) {
  EmulatedBackend be(EmulatedGpu{gpu_spec("h200"), GpuPrecision::Tf32}, EmulatedBackend::Timing::Account);
  std::vector<KernelGroup> log;
  be.log_kernels(&log);
  be.gqa_attention_forward(nullptr, nullptr, nullptr, 4, 512, 9, 3, 64, AttentionMask::Causal);
  be.adamw_update(nullptr, nullptr, nullptr, nullptr, 1000, AdamWConfig{}, 1.0f, 1);
  be.matmul_forward(nullptr, nullptr, nullptr, nullptr, 512, 576, 1536);
  be.log_kernels(nullptr);
  be.fill(nullptr, 0.0f, 100);  // not logged
  const auto at = [](const KernelGroup& g, EmulatedWork w) { return g.seconds[static_cast<std::size_t>(w)]; };
  ASSERT_EQ(log.size(), 4U);
  EXPECT_EQ(log[0].kernels, 2 * 4 * 3);  // the batched GEMMs, with their FLOPs and the scores' bytes
  EXPECT_GT(at(log[0], EmulatedWork::Attention), 0.0);
  EXPECT_GT(at(log[0], EmulatedWork::Scores), 0.0);
  EXPECT_EQ(at(log[0], EmulatedWork::Rows), 0.0);
  EXPECT_EQ(log[1].kernels, 1);  // the row-wise kernel
  EXPECT_GT(at(log[1], EmulatedWork::Rows), 0.0);
  EXPECT_EQ(log[2].kernels, 0);  // the optimizer: a plain op
  EXPECT_GT(at(log[2], EmulatedWork::Optimizer), 0.0);
  EXPECT_EQ(log[3].kernels, 1);
  EXPECT_GT(at(log[3], EmulatedWork::Matmul), 0.0);
  double logged = 0, kernels = 0;
  for (const KernelGroup& g : log) {
    kernels += g.kernels;
    for (double s : g.seconds) logged += s;
  }
  EXPECT_EQ(kernels, be.kernels());
  EXPECT_NEAR(logged, be.seconds() - be.seconds(EmulatedWork::Elementwise), 1e-15);
}

TEST(EmulatedBackend, WaitModeWaitsAndSynchronisesAtTheHost) {
  EmulatedBackend be(slow_gpu());
  // 20 ms of matmul: the host may run ahead by up to 2 ms, so the call itself has waited >= 18 ms,
  // and synchronize() (and any result returned to the host) waits for the rest.
  const auto t0 = Clock::now();
  be.matmul_forward(nullptr, nullptr, nullptr, nullptr, 1000, 1000, 10000);
  EXPECT_GE(since(t0), 0.018);
  be.synchronize();
  EXPECT_GE(since(t0), 0.020);
  const auto t1 = Clock::now();
  for (int i = 0; i < 10; ++i) be.matmul_forward(nullptr, nullptr, nullptr, nullptr, 100, 100, 100);  // tiny
  EXPECT_EQ(be.sum_squares(nullptr, 10), 0.0);           // placeholders read 0 ...
  EXPECT_GE(since(t1), 10 * kMeasuredRowKernelSeconds);  // ... once the queued kernels have run
}

TEST(EmulatedBackend, OtherThreadsRunOnTheCommunicationStream) {
  EmulatedBackend be(slow_gpu());
  // 30 ms queued on the compute stream by this thread (it returns up to 2 ms early) ...
  be.matmul_forward(nullptr, nullptr, nullptr, nullptr, 1000, 1500, 10000);
  // ... does not delay a short kernel that the communication thread runs meanwhile.
  double comm_s = 1.0;
  std::thread t([&] {
    const auto t0 = Clock::now();
    be.scale(nullptr, 0.5f, 1000);
    comm_s = since(t0);
  });
  t.join();
  EXPECT_LT(comm_s, 0.025);
  EXPECT_GT(be.comm_stream().seconds(), 0.0);
}

// Note [CC hardware costs]: in CC mode every copy crosses the bounce buffers at the measured plateau
// plus CC's fixed cost, in its direction, and every kernel's launch costs 5.05 us more; with CC off the
// same ops cost what they did.
TEST(EmulatedBackend, CcModeChargesCopiesAtThePlateauAndEveryLaunch) {
  EmulatedGpu plain = slow_gpu();
  EmulatedGpu cc = slow_gpu();
  cc.cc = cc_costs(CcHardware::H100Pageable);
  EXPECT_EQ(cc_costs(CcHardware::None).on(), false);
  EXPECT_NEAR(cc.cc.launch_extra_us, 9.98 - 4.93, 1e-12);
  EmulatedBackend off(plain, EmulatedBackend::Timing::Account), on(cc, EmulatedBackend::Timing::Account);
  std::vector<float> host(1 << 20);
  for (EmulatedBackend* be : {&off, &on}) {
    DeviceBuffer buf(*be, host.size() * sizeof(float));
    be->copy_to_device(buf.data(), host.data(), host.size() * sizeof(float));
    be->matmul_forward(buf.as<float>(), buf.as<float>(), buf.as<float>(), nullptr, 64, 64, 64);
    be->copy_to_host(host.data(), buf.data(), 4);
  }
  const double bytes = 4.0 * (1 << 20);
  EXPECT_NEAR(on.cc_copy_seconds(), 33.39e-6 + bytes / 2.617e9 + 37.00e-6 + 4 / 2.519e9, 1e-12);
  EXPECT_NEAR(on.seconds(EmulatedWork::Transfer), on.cc_copy_seconds(), 1e-12);  // not PCIe's rate as well
  EXPECT_NEAR(on.cc_launch_seconds(), 5.05e-6, 1e-12);                           // one kernel: the matmul
  EXPECT_NEAR(on.seconds(EmulatedWork::Launches), off.seconds(EmulatedWork::Launches) + 5.05e-6, 1e-12);
  EXPECT_EQ(on.seconds(EmulatedWork::Matmul), off.seconds(EmulatedWork::Matmul));
  EXPECT_EQ(off.cc_copy_seconds() + off.cc_launch_seconds(), 0.0);
  EXPECT_NE(cc.describe().find("CC mode (h100-pageable"), std::string::npos);
}

TEST(EmulatedBackend, MemoryIsAliasedAndKeepsHoldingZeros) {
  EmulatedBackend be(slow_gpu(), EmulatedBackend::Timing::Account, std::size_t{1} << 20);
  // 1 GiB of address space on a 1 MiB block: every MiB is the same memory.
  DeviceBuffer big(be, std::size_t{1} << 30);
  auto* f = big.as<float>();
  EXPECT_EQ(f[(std::size_t{1} << 28) - 1], 0.0f);
  // Host values never reach it: copies to the device and fills are costs only.
  std::vector<float> ones(1000, 1.0f);
  be.copy_to_device(f, ones.data(), ones.size() * sizeof(float));
  be.fill(f, 2.0f, 1000);
  EXPECT_EQ(f[0], 0.0f);
  EXPECT_GT(be.seconds(EmulatedWork::Transfer), 0.0);
  // Copies to the host are real (the digest of an emulated run's parameters reads them).
  std::vector<float> back(1000, 7.0f);
  be.copy_to_host(back.data(), f + 5, back.size() * sizeof(float));
  EXPECT_EQ(back[999], 0.0f);
  f[5] = 3.0f;  // a write through the ring lands in the one block ...
  EXPECT_EQ(f[5 + (std::size_t{1} << 18)], 3.0f);
  DeviceBuffer other(be, 4096);
  EXPECT_EQ(other.as<float>()[5], 3.0f);  // ... which every allocation aliases
  f[5] = 0.0f;
}

TEST(EmulatedBackend, MadeByTheFactory) {
  BackendOptions o;
  o.device = DeviceKind::Emulated;
  o.gpu = EmulatedGpu{gpu_spec("h200"), GpuPrecision::Bf16};
  auto be = make_backend(o);
  EXPECT_EQ(be->kind(), DeviceKind::Emulated);
  EXPECT_NE(be->describe().find("h200 bf16"), std::string::npos);
  EXPECT_STREQ(device_name(be->kind()), "emulated");
}

// Note [GPU crypto shares the SMs]: the AES-GCM kernels the communication thread ran before the end of
// backward delay the compute thread by exactly their overlap with it, once, when the step settles; what
// ran after backward, and what the compute thread ran itself, take nothing from it.
TEST(EmulatedBackend, AesKernelsDelayComputeByTheirOverlapWithBackward) {
  VirtualClock clock;
  EmulatedBackend be(EmulatedGpu{gpu_spec("h100")}, EmulatedBackend::Timing::Wait, std::size_t{1} << 20,
                     &clock);
  clock.elapse(0.010);                                           // backward ends at 10 ms
  be.lend_sms(clock.now() - clock_seconds(0.002), clock.now());  // the compute thread's own: ignored
  std::thread comm([&] {
    const auto kernel = [&](double gap, double s) {
      clock.elapse(gap);
      const RunClock::TimePoint begin = clock.now();
      clock.elapse(s);
      be.lend_sms(begin, clock.now());
    };
    kernel(0.004, 0.003);  // 4-7 ms: all of it during backward
    kernel(0.002, 0.005);  // 9-14 ms: 1 ms of it during backward
    kernel(0.001, 0.002);  // 15-17 ms: after backward
  });
  comm.join();
  const RunClock::TimePoint before = clock.now();
  be.settle_shared_units();
  EXPECT_NEAR(std::chrono::duration<double>(clock.now() - before).count(), 0.004, 1e-9);
  EXPECT_NEAR(be.sm_wait_seconds(), 0.004, 1e-9);
  be.settle_shared_units();  // settled once: nothing is charged twice
  EXPECT_NEAR(std::chrono::duration<double>(clock.now() - before).count(), 0.004, 1e-9);
}

}  // namespace
}  // namespace tt
