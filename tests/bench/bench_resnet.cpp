// Google Benchmark of ResNet training steps on the CPU backend: one iteration = zero_grad + forward +
// backward + SGD update of a whole batch; reports images/s and the model's GFLOP/s (convs + fc,
// forward + backward, see Resnet::flops_for). Compare with tools/bench/compare_resnet18_torch.py
// (PyTorch 1.13, same shapes and threads).
//
//   build/tests/bench/bench_resnet                                   # resnet18 32x32 B=32, 2 threads
//   build/tests/bench/bench_resnet --benchmark_filter=Small
//   build/tests/bench/bench_resnet --benchmark_filter=dnnl:2          # what teetrain runs
//
// Arguments: batch, threads, conv (0 = the im2col + sgemm reference, 1 = oneDNN for every conv, 2 = what
// teetrain runs: oneDNN, im2col for outputs <= 4x4; cpu_backend.h, CpuConv).
// "Imagenet" runs torchvision's resnet18 unchanged (7x7/2 stem + maxpool)
// on 32x32 images; "Cifar" uses the small stem (3x3/1, no maxpool) that ResnetStem::Auto picks for
// 32x32, which is ~15x more work per image.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_conv.h"
#include "core/rng.h"
#include "models/resnet/resnet.h"

namespace {

void train_steps(benchmark::State& state, tt::ResnetConfig cfg) {
  const int B = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const tt::CpuConv modes[] = {tt::CpuConv::Reference, tt::CpuConv::Dnnl, tt::CpuConv::Auto};
  const tt::CpuConv conv = modes[state.range(2)];
  if (conv != tt::CpuConv::Reference && !tt::cpu::dnnl_available()) {
    state.SkipWithError("built without oneDNN");
    return;
  }
  auto be = tt::make_cpu_backend(threads, conv);
  tt::Resnet model(*be, cfg);
  model.init_params(1);
  tt::Batch batch;
  batch.B = B;
  batch.images.resize(static_cast<std::size_t>(B) * static_cast<std::size_t>(cfg.in_channels) *
                      static_cast<std::size_t>(cfg.image_size) * static_cast<std::size_t>(cfg.image_size));
  tt::Rng rng(2);
  for (float& x : batch.images) x = static_cast<float>(rng.normal());
  for (int i = 0; i < B; ++i)
    batch.targets.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(cfg.num_classes))));
  std::vector<float> mom(model.num_params(), 0.0f);
  tt::SgdConfig sgd;
  sgd.lr = 0.01f;
  model.reserve(B);
  for (auto _ : state) {
    model.zero_grad();
    benchmark::DoNotOptimize(model.forward(batch));
    model.backward(nullptr);
    be->sgd_update(model.param_data(), model.grad_data(), mom.data(), model.num_params(), sgd, 1.0f);
  }
  const tt::StepFlops f = model.flops(B, 0);
  state.counters["images/s"] = benchmark::Counter(B, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter((f.forward + f.backward) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(be->describe());
}

tt::ResnetConfig resnet18_32(tt::ResnetStem stem) {
  tt::ResnetConfig cfg = tt::ResnetConfig::preset("resnet18");
  cfg.image_size = 32;
  cfg.num_classes = 10;
  cfg.stem = stem;
  return cfg;
}

void BM_Resnet18Imagenet32(benchmark::State& state) {
  train_steps(state, resnet18_32(tt::ResnetStem::ImageNet));
}
void BM_Resnet18Cifar32(benchmark::State& state) {
  train_steps(state, resnet18_32(tt::ResnetStem::Small));
}
void BM_ResnetSmall28(benchmark::State& state) {
  train_steps(state, tt::ResnetConfig::preset("resnet-small"));
}

BENCHMARK(BM_Resnet18Imagenet32)
    ->ArgsProduct({{32}, {2}, {0, 1, 2}})
    ->ArgNames({"B", "threads", "dnnl"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);
BENCHMARK(BM_Resnet18Cifar32)
    ->ArgsProduct({{32}, {2}, {0, 1, 2}})
    ->ArgNames({"B", "threads", "dnnl"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);
BENCHMARK(BM_ResnetSmall28)
    ->ArgsProduct({{128}, {2}, {0, 1, 2}})
    ->ArgNames({"B", "threads", "dnnl"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);

}  // namespace

BENCHMARK_MAIN();
