// Determinism of the CPU backend: the same inputs twice give bit-identical results, and the ops that do
// not use multi-threaded sgemm give bit-identical results for 1, 2 and 3 threads (fixed partitions).
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::bit_equal;
using test::random_tokens;
using test::random_vec;

// Runs op(backend, outputs) on fresh copies of `init` for each thread count and for a repeat with the
// first backend; every output must match the first run bit for bit.
using Outputs = std::vector<std::vector<float>>;
void expect_deterministic(const Outputs& init, const std::function<void(Backend&, Outputs&)>& op,
                          std::initializer_list<int> thread_counts) {
  Outputs first;
  for (int threads : thread_counts) {
    auto be = make_cpu_backend(threads);
    for (int rep = 0; rep < 2; ++rep) {
      Outputs outs = init;
      op(*be, outs);
      if (first.empty()) {
        first = outs;
        continue;
      }
      for (std::size_t i = 0; i < outs.size(); ++i)
        EXPECT_TRUE(bit_equal(outs[i], first[i]))
            << "output " << i << ", threads " << threads << ", rep " << rep;
    }
  }
}

constexpr int N = 300, C = 200;  // above the parallel thresholds, C not a multiple of the column block

TEST(CpuBackendDeterminism, SumSquaresAndMeanAcrossThreads) {
  const auto x = random_vec(3'000'017, 1);
  double ss[3], mn[3];
  int k = 0;
  for (int threads : {1, 2, 3}) {
    auto be = make_cpu_backend(threads);
    ss[k] = be->sum_squares(x.data(), x.size());
    mn[k] = be->mean(x.data(), x.size());
    EXPECT_EQ(be->sum_squares(x.data(), x.size()), ss[k]);
    ++k;
  }
  EXPECT_EQ(ss[0], ss[1]);
  EXPECT_EQ(ss[0], ss[2]);
  EXPECT_EQ(mn[0], mn[1]);
  EXPECT_EQ(mn[0], mn[2]);
}

TEST(CpuBackendDeterminism, LayernormAcrossThreads) {
  const auto x = random_vec(N * C, 2), w = random_vec(C, 3), b = random_vec(C, 4), g = random_vec(N * C, 5);
  // outputs: out, mean, rstd, dinp, dweight, dbias
  Outputs init{std::vector<float>(N * C), std::vector<float>(N), std::vector<float>(N),
               random_vec(N * C, 6),      random_vec(C, 7),      random_vec(C, 8)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.layernorm_forward(o[0].data(), o[1].data(), o[2].data(), x.data(), w.data(),
                                              b.data(), N, C);
                         be.layernorm_backward(o[3].data(), o[4].data(), o[5].data(), g.data(), x.data(),
                                               w.data(), o[1].data(), o[2].data(), N, C);
                       },
                       {1, 2, 3});
}

TEST(CpuBackendDeterminism, EncoderBackwardAcrossThreads) {
  const int B = 4, T = 75, V = 7;  // few distinct tokens: many positions add into the same dwte row
  const auto tokens = random_tokens(B * T, V, 9);
  const auto g = random_vec(B * T * C, 10);
  Outputs init{random_vec(V * C, 11), random_vec(T * C, 12)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.encoder_backward(o[0].data(), o[1].data(), g.data(), tokens.data(), B, T, C);
                       },
                       {1, 2, 3});
}

TEST(CpuBackendDeterminism, MatmulBiasGradAcrossThreads) {
  const int OC = 333;
  const auto g = random_vec(N * OC, 13);
  Outputs init{random_vec(OC, 14)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.matmul_backward(nullptr, nullptr, o[0].data(), g.data(), nullptr, nullptr, N, 8,
                                            OC);
                       },
                       {1, 2, 3});
}

TEST(CpuBackendDeterminism, AttentionAcrossThreads) {
  // Attention runs single-threaded sgemms per (batch, head), so it too is thread-count independent.
  const int B = 2, T = 130, AC = 32, NH = 4;
  const auto qkv = random_vec(B * T * 3 * AC, 15), g = random_vec(B * T * AC, 16);
  Outputs init{std::vector<float>(B * T * AC), std::vector<float>(B * NH * T * T),
               random_vec(B * T * 3 * AC, 17), std::vector<float>(B * NH * T * T)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.attention_forward(o[0].data(), o[1].data(), qkv.data(), B, T, AC, NH,
                                              AttentionMask::Causal);
                         be.attention_backward(o[2].data(), o[3].data(), g.data(), qkv.data(), o[1].data(), B,
                                               T, AC, NH, AttentionMask::Causal);
                       },
                       {1, 2, 3});
}

TEST(CpuBackendDeterminism, ElementwiseOpsAcrossThreads) {
  const int V = 1000, Vp = 1024, R = 64;
  const auto x = random_vec(N * C, 18, -4.0f, 4.0f), g = random_vec(N * C, 19);
  const auto logits = random_vec(R * Vp, 20, -3.0f, 3.0f);
  const auto targets = random_tokens(R, V, 21);
  Outputs init{std::vector<float>(N * C), random_vec(N * C, 22), std::vector<float>(R),
               std::vector<float>(R * Vp), random_vec(R * Vp, 23)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.gelu_forward(o[0].data(), x.data(), x.size());
                         be.gelu_backward(o[1].data(), x.data(), g.data(), x.size());
                         be.softmax_xent_forward(o[2].data(), o[3].data(), logits.data(), targets.data(), R,
                                                 V, Vp);
                         be.softmax_xent_backward(o[4].data(), o[3].data(), targets.data(), R, V, Vp, 0.5f);
                       },
                       {1, 2, 3});
}

TEST(CpuBackendDeterminism, MatmulRepeatable) {
  // sgemm results may depend on OpenBLAS's thread split, so only run-to-run identity is required.
  const int IC = 96, OC = 160;
  const auto inp = random_vec(N * IC, 24), w = random_vec(OC * IC, 25), bias = random_vec(OC, 26),
             g = random_vec(N * OC, 27);
  Outputs init{std::vector<float>(N * OC), random_vec(N * IC, 28), random_vec(OC * IC, 29),
               random_vec(OC, 30)};
  expect_deterministic(init,
                       [&](Backend& be, Outputs& o) {
                         be.matmul_forward(o[0].data(), inp.data(), w.data(), bias.data(), N, IC, OC);
                         be.matmul_backward(o[1].data(), o[2].data(), o[3].data(), g.data(), inp.data(),
                                            w.data(), N, IC, OC);
                       },
                       {2});
}

}  // namespace
}  // namespace tt
