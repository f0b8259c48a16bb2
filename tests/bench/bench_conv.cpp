// Google Benchmark of the CPU backend's convolutions, one per distinct conv of ResNet-18 on 32x32
// images (CIFAR stem, batch 32 by default): forward, and backward (input and weight gradients), on
// oneDNN and on the im2col + sgemm reference (core/cpu/cpu_conv.h). GFLOP/s counts 2 FLOPs per
// multiply-add (backward: both gradients, 2x forward), so a regression in one layer shape shows here
// before it shows in bench_resnet's whole step.
//
//   build/tests/bench/bench_conv                                   # every layer, both paths, 2 threads
//   build/tests/bench/bench_conv --benchmark_filter='dnnl:1'       # oneDNN only
//   build/tests/bench/bench_conv --benchmark_filter='Fwd/layer:2'  # one shape
//
// Arguments: layer (index into kLayers), threads, dnnl (0 = reference, 1 = oneDNN).
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_conv.h"
#include "core/rng.h"

namespace {

constexpr int kBatch = 32;

// (IC, H, OC, K, stride, pad) of every distinct conv of resnet18 at 32x32 (both stems' first convs).
struct Layer {
  const char* name;
  int IC, H, OC, K, stride, pad;
};
constexpr std::array<Layer, 12> kLayers{{
    {"stem3x3 3->64 32x32", 3, 32, 64, 3, 1, 1},
    {"stem7x7/2 3->64 32x32", 3, 32, 64, 7, 2, 3},
    {"layer1 3x3 64->64 32x32", 64, 32, 64, 3, 1, 1},
    {"layer2.0 3x3/2 64->128 32x32", 64, 32, 128, 3, 2, 1},
    {"layer2.0 down 1x1/2 64->128", 64, 32, 128, 1, 2, 0},
    {"layer2 3x3 128->128 16x16", 128, 16, 128, 3, 1, 1},
    {"layer3.0 3x3/2 128->256 16x16", 128, 16, 256, 3, 2, 1},
    {"layer3 3x3 256->256 8x8", 256, 8, 256, 3, 1, 1},
    {"layer4.0 3x3/2 256->512 8x8", 256, 8, 512, 3, 2, 1},
    {"layer4 3x3 512->512 4x4", 512, 4, 512, 3, 1, 1},
    {"layer4 3x3 512->512 1x1 (imagenet stem)", 512, 1, 512, 3, 1, 1},
    {"layer3 3x3 256->256 2x2 (imagenet stem)", 256, 2, 256, 3, 1, 1},
}};

struct ConvSetup {
  std::unique_ptr<tt::Backend> be;
  tt::Conv2dShape s;
  std::vector<float> x, w, y, dx, dw, ws;
};

// Returns false (and marks the benchmark skipped) when oneDNN is asked for in a build without it.
bool setup(benchmark::State& state, ConvSetup& c) {
  const Layer& l = kLayers[static_cast<std::size_t>(state.range(0))];
  const bool dnnl = state.range(2) != 0;
  if (dnnl && !tt::cpu::dnnl_available()) {
    state.SkipWithError("built without oneDNN");
    return false;
  }
  c.be = tt::make_cpu_backend(static_cast<int>(state.range(1)),
                              dnnl ? tt::CpuConv::Dnnl : tt::CpuConv::Reference);
  c.s = tt::Conv2dShape{kBatch, l.IC, l.H, l.H, l.OC, l.K, l.K, l.stride, l.pad};
  tt::Rng rng(3);
  auto fill = [&rng](std::vector<float>& v, std::size_t n) {
    v.resize(n);
    for (float& f : v) f = static_cast<float>(rng.normal());
  };
  fill(c.x, static_cast<std::size_t>(c.s.B) * c.s.IC * c.s.H * c.s.W);        // (B, IC, H, W)
  fill(c.w, static_cast<std::size_t>(c.s.OC) * c.s.IC * c.s.KH * c.s.KW);     // (OC, IC, KH, KW)
  fill(c.y, static_cast<std::size_t>(c.s.B) * c.s.OC * c.s.OH() * c.s.OW());  // (B, OC, OH, OW)
  c.dx.assign(c.x.size(), 0.0f);
  c.dw.assign(c.w.size(), 0.0f);
  c.ws.resize(c.be->conv2d_workspace_floats(c.s));
  state.SetLabel(std::string(l.name) + (dnnl ? ", oneDNN" : ", im2col"));
  return true;
}

double forward_flops(const tt::Conv2dShape& s) {
  return 2.0 * s.B * s.OC * s.OH() * s.OW() * s.IC * s.KH * s.KW;
}

void BM_ConvFwd(benchmark::State& state) {
  ConvSetup c;
  if (!setup(state, c)) return;
  for (auto _ : state) {
    c.be->conv2d_forward(c.y.data(), c.x.data(), c.w.data(), nullptr, c.ws.data(), c.s);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(forward_flops(c.s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_ConvBwd(benchmark::State& state) {
  ConvSetup c;
  if (!setup(state, c)) return;
  for (auto _ : state) {
    c.be->conv2d_backward(c.dx.data(), c.dw.data(), nullptr, c.y.data(), c.x.data(), c.w.data(), c.ws.data(),
                          c.s);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * forward_flops(c.s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void layers(benchmark::internal::Benchmark* b) {
  b->ArgNames({"layer", "threads", "dnnl"});
  for (int i = 0; i < static_cast<int>(kLayers.size()); ++i)
    for (int dnnl : {0, 1}) b->Args({i, 2, dnnl});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

BENCHMARK(BM_ConvFwd)->Apply(layers);
BENCHMARK(BM_ConvBwd)->Apply(layers);

}  // namespace

BENCHMARK_MAIN();
