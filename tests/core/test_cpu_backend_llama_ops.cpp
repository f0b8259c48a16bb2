// Finite-difference gradient checks of the CPU backend's Llama ops (RMSNorm, rotary embeddings, SwiGLU,
// grouped-query attention), as test_cpu_backend_grad.cpp does for the others: loss = sum(out * w), and
// gradient buffers start random so that backward is seen to accumulate. Plus the facts the model relies
// on: rotary embeddings turn pairs by the documented angles, and grouped attention with as many
// key/value heads as query heads is attention_forward's result bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::check_grad;
using test::delta;
using test::GradCheck;
using test::random_vec;
using test::weighted_sum;

#define EXPECT_GRAD_OK(r, what)                                                                              \
  EXPECT_LE((r).worst, 1.0) << what << ": element " << (r).at << " analytic " << (r).analytic << " numeric " \
                            << (r).numeric << " (" << (r).checked << " checked)"

std::size_t sz(long a) {
  return static_cast<std::size_t>(a);
}

TEST(CpuBackendLlamaOps, RmsnormGradient) {
  auto be = make_cpu_backend(2);
  const int N = 5, C = 12;
  auto x = random_vec(sz(N * C), 1, -1.0f, 2.0f);
  auto wt = random_vec(sz(C), 2, 0.5f, 1.5f);
  const auto w = random_vec(sz(N * C), 3);
  std::vector<float> out(x.size()), rstd(N);
  auto loss = [&] {
    be->rmsnorm_forward(out.data(), rstd.data(), x.data(), wt.data(), N, C, 1e-5f);
    return weighted_sum(out, w);
  };
  loss();
  const auto dx0 = random_vec(x.size(), 4), dw0 = random_vec(wt.size(), 5);
  auto dx = dx0, dw = dw0;
  be->rmsnorm_backward(dx.data(), dw.data(), w.data(), x.data(), wt.data(), rstd.data(), N, C);
  GradCheck r = check_grad(x, delta(dx, dx0), loss);
  EXPECT_GRAD_OK(r, "rmsnorm dinp");
  r = check_grad(wt, delta(dw, dw0), loss);
  EXPECT_GRAD_OK(r, "rmsnorm dweight");
  // out = x / rms(x) * weight: row 0 against a direct computation.
  loss();  // check_grad's last call saw a perturbed x
  double ss = 0;
  for (int c = 0; c < C; ++c) ss += static_cast<double>(x[sz(c)]) * x[sz(c)];
  const double rs = 1.0 / std::sqrt(ss / C + 1e-5);
  for (int c = 0; c < C; ++c) EXPECT_NEAR(out[sz(c)], x[sz(c)] * rs * wt[sz(c)], 1e-5);
}

TEST(CpuBackendLlamaOps, RopeTurnsPairsByPositionAngles) {
  auto be = make_cpu_backend(2);
  const int B = 2, T = 5, HS = 8, heads = 3, row = 4 * HS;  // the fourth head of each row is left alone
  const float base = 100.0f;
  const auto x0 = random_vec(sz(B * T * row), 6);
  auto x = x0;
  be->rope_forward(x.data(), B, T, row, heads, HS, base);
  for (int bt = 0; bt < B * T; ++bt) {
    const int t = bt % T;
    for (int h = 0; h < 4; ++h) {
      for (int i = 0; i < HS / 2; ++i) {
        const std::size_t lo = sz(bt * row + h * HS + i), hi = lo + HS / 2;
        if (h == heads) {
          EXPECT_EQ(x[lo], x0[lo]);
          continue;
        }
        const double a = t * std::pow(static_cast<double>(base), -2.0 * i / HS);
        EXPECT_NEAR(x[lo], x0[lo] * std::cos(a) - x0[hi] * std::sin(a), 1e-5);
        EXPECT_NEAR(x[hi], x0[hi] * std::cos(a) + x0[lo] * std::sin(a), 1e-5);
      }
    }
  }
}

TEST(CpuBackendLlamaOps, RopeGradient) {
  auto be = make_cpu_backend(2);
  const int B = 2, T = 6, HS = 6, heads = 2, row = 3 * HS;
  auto x = random_vec(sz(B * T * row), 7);
  const auto w = random_vec(x.size(), 8);
  std::vector<float> y(x.size());
  auto loss = [&] {
    y = x;
    be->rope_forward(y.data(), B, T, row, heads, HS, 10000.0f);
    return weighted_sum(y, w);
  };
  auto dx = w;  // backward turns dout into dx in place
  be->rope_backward(dx.data(), B, T, row, heads, HS, 10000.0f);
  const GradCheck r = check_grad(x, dx, loss);
  EXPECT_GRAD_OK(r, "rope dx");
}

TEST(CpuBackendLlamaOps, SwigluGradient) {
  auto be = make_cpu_backend(2);
  const int N = 4, F = 25;
  auto x = random_vec(sz(N * 2 * F), 9, -4.0f, 4.0f);
  const auto w = random_vec(sz(N * F), 10);
  std::vector<float> out(w.size());
  auto loss = [&] {
    be->swiglu_forward(out.data(), x.data(), N, F);
    return weighted_sum(out, w);
  };
  loss();
  for (int n = 0; n < N; ++n) {  // out = silu(gate) * up
    const float g = x[sz(n * 2 * F + 3)], u = x[sz(n * 2 * F + F + 3)];
    EXPECT_NEAR(out[sz(n * F + 3)], g / (1.0 + std::exp(-g)) * u, 1e-5);
  }
  const auto dx0 = random_vec(x.size(), 11);
  auto dx = dx0;
  be->swiglu_backward(dx.data(), x.data(), w.data(), N, F);
  const GradCheck r = check_grad(x, delta(dx, dx0), loss, 1e-3f);
  EXPECT_GRAD_OK(r, "swiglu dinp");
}

void check_gqa(int B, int T, int NH, int NKV, int HS, std::size_t max_checks) {
  auto be = make_cpu_backend(2);
  auto qkv = random_vec(sz(static_cast<long>(B) * T * (NH + 2 * NKV) * HS), 12, -1.5f, 1.5f);
  const auto w = random_vec(sz(static_cast<long>(B) * T * NH * HS), 13);
  std::vector<float> out(w.size()), att(sz(static_cast<long>(B) * NH * T * T));
  auto loss = [&] {
    be->gqa_attention_forward(out.data(), att.data(), qkv.data(), B, T, NH, NKV, HS, AttentionMask::Causal);
    return weighted_sum(out, w);
  };
  loss();
  const auto dqkv0 = random_vec(qkv.size(), 14);
  auto dqkv = dqkv0;
  std::vector<float> scratch(att.size(), 123.0f);
  be->gqa_attention_backward(dqkv.data(), scratch.data(), w.data(), qkv.data(), att.data(), B, T, NH, NKV, HS,
                             AttentionMask::Causal);
  const GradCheck r = check_grad(qkv, delta(dqkv, dqkv0), loss, 1e-2f, 2e-3, 1e-2, max_checks);
  EXPECT_GRAD_OK(r, "gqa dqkv NH=" << NH << " NKV=" << NKV << " T=" << T);
}

TEST(CpuBackendLlamaOps, GroupedQueryAttentionGradient) {
  check_gqa(2, 6, 4, 2, 4, 400);    // groups of two query heads
  check_gqa(1, 5, 3, 1, 4, 400);    // one key/value head for all (multi-query)
  check_gqa(1, 140, 4, 2, 2, 250);  // across the 128-row causal block
}

// attention_forward/backward are the grouped op with NKV = NH: the same bits, on any thread count.
TEST(CpuBackendLlamaOps, GroupedWithOneHeadPerGroupIsMultiHeadAttention) {
  const int B = 2, T = 7, C = 12, NH = 3;
  const auto qkv = random_vec(sz(B * T * 3 * C), 15);
  const auto dout = random_vec(sz(B * T * C), 16);
  for (int threads : {1, 3}) {
    auto be = make_cpu_backend(threads);
    std::vector<float> o1(dout.size()), o2(dout.size()), a1(sz(B * NH * T * T)), a2(a1.size()), s(a1.size());
    be->attention_forward(o1.data(), a1.data(), qkv.data(), B, T, C, NH, AttentionMask::Causal);
    be->gqa_attention_forward(o2.data(), a2.data(), qkv.data(), B, T, NH, NH, C / NH, AttentionMask::Causal);
    EXPECT_TRUE(test::bit_equal(o1, o2));
    std::vector<float> d1(qkv.size()), d2(qkv.size());
    be->attention_backward(d1.data(), s.data(), dout.data(), qkv.data(), a1.data(), B, T, C, NH,
                           AttentionMask::Causal);
    be->gqa_attention_backward(d2.data(), s.data(), dout.data(), qkv.data(), a2.data(), B, T, NH, NH, C / NH,
                               AttentionMask::Causal);
    EXPECT_TRUE(test::bit_equal(d1, d2));
  }
}

}  // namespace
}  // namespace tt
