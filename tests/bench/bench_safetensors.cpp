// Parsing a safetensors header of n tensors: linear in n (engine/checkpoint/safetensors.cpp parses the key
// order in a SAX pass; nlohmann's parser callback rescanned the top-level object after every tensor,
// which was quadratic: 20k tensors took seconds, 60k minutes). The target, 60k tensors in well under
// a second, is read off this benchmark's output (and the fitted complexity), never asserted in a test.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"

namespace {

std::vector<std::byte> header_of(std::size_t n) {
  static std::vector<float> values;
  values.assign(n, 1.0f);
  std::vector<tt::SafeTensor> tensors;
  for (std::size_t i = 0; i < n; ++i)
    tensors.push_back(
        {"model.layers." + std::to_string(i) + ".weight", {1}, std::span<const float>(values).subspan(i, 1)});
  return tt::safetensors_encode(tensors, {{"format", "pt"}});
}

// Tensor counts from 5k to 60k, fitted to O(N): a quadratic parse shows as a bad fit, not a number.
void tensor_counts(benchmark::internal::Benchmark* b) {
  for (int n : {5'000, 10'000, 20'000, 60'000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);
}

void BM_SafetensorsParseHeader(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<std::byte> file = header_of(n);
  for (auto _ : state) benchmark::DoNotOptimize(tt::safetensors_parse_header(file, "bench.safetensors"));
  state.SetComplexityN(state.range(0));
  state.counters["tensors"] = static_cast<double>(n);
}
BENCHMARK(BM_SafetensorsParseHeader)->Apply(tensor_counts);

void BM_SafetensorsEncode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(header_of(n));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_SafetensorsEncode)->Apply(tensor_counts);

void BM_SafetensorsDecode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<std::byte> file = header_of(n);
  for (auto _ : state) benchmark::DoNotOptimize(tt::safetensors_decode(file, "bench.safetensors"));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_SafetensorsDecode)->Apply(tensor_counts);

}  // namespace

BENCHMARK_MAIN();
