// Google Benchmark of the CPU backend's ops at GPT-2 (124M) shapes: B = 4, T = 64 (N = 256 rows),
// C = 768, NH = 12, vocabulary 50257 padded to 50304. Matmuls report GFLOP/s (2*N*IC*OC per product);
// the last argument of every benchmark is the thread count.
//
//   build/tests/bench/bench_ops --benchmark_filter=Matmul
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cpu/cpu_backend.h"

namespace {

// Deterministic, cheap-to-generate values in [-1, 1): good enough for timing (no denormals, no NaNs).
std::vector<float> pattern(std::size_t n, int salt = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 7919 + static_cast<std::size_t>(salt)) % 2001) / 1000.0f - 1.0f;
  return v;
}

std::size_t sz(std::int64_t x) {
  return static_cast<std::size_t>(x);
}

void set_gflops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr int kN = 256;

// ---- matmul (sgemm) ---------------------------------------------------------------------------------

void BM_MatmulForward(benchmark::State& state) {
  const int IC = static_cast<int>(state.range(0)), OC = static_cast<int>(state.range(1));
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(2)));
  const auto inp = pattern(sz(kN) * IC), w = pattern(sz(OC) * IC, 1), bias = pattern(sz(OC), 2);
  std::vector<float> out(sz(kN) * OC);  // (N, OC)
  for (auto _ : state) {
    be->matmul_forward(out.data(), inp.data(), w.data(), bias.data(), kN, IC, OC);
    benchmark::DoNotOptimize(out.data());
  }
  set_gflops(state, 2.0 * kN * IC * OC);
}

void BM_MatmulBackward(benchmark::State& state) {
  const int IC = static_cast<int>(state.range(0)), OC = static_cast<int>(state.range(1));
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(2)));
  const auto inp = pattern(sz(kN) * IC), w = pattern(sz(OC) * IC, 1), dout = pattern(sz(kN) * OC, 2);
  std::vector<float> dinp(sz(kN) * IC), dw(sz(OC) * IC), db(sz(OC));
  for (auto _ : state) {
    be->matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), kN, IC, OC);
    benchmark::DoNotOptimize(dw.data());
  }
  set_gflops(state, 4.0 * kN * IC * OC);  // two products (dinp, dweight)
}

// GPT-2 linear layers: qkv (768 -> 2304), attention proj (768 -> 768), fc (768 -> 3072),
// fc proj (3072 -> 768), LM head (768 -> 50304).
void MatmulShapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (auto [ic, oc] : {std::pair{768, 2304}, std::pair{768, 768}, std::pair{768, 3072},
                          std::pair{3072, 768}, std::pair{768, 50304}}) {
      b->Args({ic, oc, threads});
    }
  }
  b->ArgNames({"IC", "OC", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_MatmulForward)->Apply(MatmulShapes);
BENCHMARK(BM_MatmulBackward)->Apply(MatmulShapes);

// ---- non-matmul ops ---------------------------------------------------------------------------------

void BM_LayernormForward(benchmark::State& state) {
  const int C = 768;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto x = pattern(sz(kN) * C), w = pattern(C, 1), b = pattern(C, 2);
  std::vector<float> out(x.size()), mean(kN), rstd(kN);
  for (auto _ : state)
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), kN, C);
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<std::int64_t>(x.size() * sizeof(float)));
}

void BM_LayernormBackward(benchmark::State& state) {
  const int C = 768;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto x = pattern(sz(kN) * C), w = pattern(C, 1), b = pattern(C, 2), g = pattern(sz(kN) * C, 3);
  std::vector<float> out(x.size()), mean(kN), rstd(kN), dx(x.size()), dw(C), db(C);
  be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), kN, C);
  for (auto _ : state)
    be->layernorm_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), mean.data(),
                           rstd.data(), kN, C);
  state.SetBytesProcessed(state.iterations() * 3 * static_cast<std::int64_t>(x.size() * sizeof(float)));
}

// Attention args: B, T, threads (C = 768, NH = 12). FLOPs counted for the causal half only.
void BM_AttentionForward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), T = static_cast<int>(state.range(1)), C = 768, NH = 12;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(2)));
  const auto qkv = pattern(sz(B) * T * 3 * C);
  std::vector<float> out(sz(B) * T * C), att(sz(B) * NH * T * T);
  for (auto _ : state)
    be->attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, tt::AttentionMask::Causal);
  set_gflops(state, 2.0 * B * T * T * C);  // QK^T and att@V, each 2*B*NH*T*T*hs/2
}

void BM_AttentionBackward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), T = static_cast<int>(state.range(1)), C = 768, NH = 12;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(2)));
  const auto qkv = pattern(sz(B) * T * 3 * C), g = pattern(sz(B) * T * C, 1);
  std::vector<float> out(sz(B) * T * C), att(sz(B) * NH * T * T), dqkv(qkv.size()), scratch(att.size());
  be->attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, tt::AttentionMask::Causal);
  for (auto _ : state)
    be->attention_backward(dqkv.data(), scratch.data(), g.data(), qkv.data(), att.data(), B, T, C, NH,
                           tt::AttentionMask::Causal);
  set_gflops(state, 4.0 * B * T * T * C);  // four products
}

void BM_GeluForward(benchmark::State& state) {
  const std::size_t n = sz(kN) * 3072;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto x = pattern(n);
  std::vector<float> out(n);
  for (auto _ : state) be->gelu_forward(out.data(), x.data(), n);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void BM_GeluBackward(benchmark::State& state) {
  const std::size_t n = sz(kN) * 3072;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto x = pattern(n), g = pattern(n, 1);
  std::vector<float> dx(n);
  for (auto _ : state) be->gelu_backward(dx.data(), x.data(), g.data(), n);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void BM_SoftmaxXentForward(benchmark::State& state) {
  const int V = 50257, Vp = 50304;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto logits = pattern(sz(kN) * Vp);
  std::vector<int32_t> targets(kN);
  for (int i = 0; i < kN; ++i) targets[sz(i)] = (i * 131) % V;
  std::vector<float> losses(kN), probs(logits.size());
  for (auto _ : state)
    be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), kN, V, Vp);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN) * V);
}

void BM_SoftmaxXentBackward(benchmark::State& state) {
  const int V = 50257, Vp = 50304;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto probs = pattern(sz(kN) * Vp);
  std::vector<int32_t> targets(kN);
  for (int i = 0; i < kN; ++i) targets[sz(i)] = (i * 131) % V;
  std::vector<float> dlogits(probs.size());
  for (auto _ : state)
    be->softmax_xent_backward(dlogits.data(), probs.data(), targets.data(), kN, V, Vp, 1.0f / kN);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN) * V);
}

void BM_EncoderBackward(benchmark::State& state) {
  const int B = 4, T = 64, C = 768, V = 50304;
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  const auto g = pattern(sz(B) * T * C);
  std::vector<int32_t> tokens(sz(B) * T);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919) % V);
  std::vector<float> dwte(sz(V) * C), dwpe(sz(1024) * C);
  for (auto _ : state) be->encoder_backward(dwte.data(), dwpe.data(), g.data(), tokens.data(), B, T, C);
}

// Whole-arena ops over 124M parameters (GPT-2 small): AdamW and the gradient-norm reduction.
constexpr std::size_t kParams = 124'475'904;

void BM_AdamW(benchmark::State& state) {
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  std::vector<float> p(kParams, 0.5f), g(kParams, 0.01f), m(kParams), v(kParams);
  tt::AdamWConfig cfg;
  long step = 0;
  for (auto _ : state) be->adamw_update(p.data(), g.data(), m.data(), v.data(), kParams, cfg, 1.0f, ++step);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kParams * 7 * sizeof(float)));
}

void BM_SumSquares(benchmark::State& state) {
  auto be = tt::make_cpu_backend(static_cast<int>(state.range(0)));
  std::vector<float> g(kParams, 0.01f);
  for (auto _ : state) benchmark::DoNotOptimize(be->sum_squares(g.data(), kParams));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kParams * sizeof(float)));
}

void Threads(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LayernormForward)->Apply(Threads);
BENCHMARK(BM_LayernormBackward)->Apply(Threads);
BENCHMARK(BM_AttentionForward)
    ->ArgNames({"B", "T", "threads"})
    ->Args({4, 64, 2})
    ->Args({1, 1024, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_AttentionBackward)
    ->ArgNames({"B", "T", "threads"})
    ->Args({4, 64, 2})
    ->Args({1, 1024, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GeluForward)->Apply(Threads);
BENCHMARK(BM_GeluBackward)->Apply(Threads);
BENCHMARK(BM_SoftmaxXentForward)->Apply(Threads);
BENCHMARK(BM_SoftmaxXentBackward)->Apply(Threads);
BENCHMARK(BM_EncoderBackward)->Apply(Threads);
BENCHMARK(BM_AdamW)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_SumSquares)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("backend", tt::make_cpu_backend(2)->describe());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
