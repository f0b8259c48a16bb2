// Finite-difference gradient checks of every CPU backward op. Loss = sum(out * w) with random w, so
// dout = w. Gradient buffers start from random values to check that backward ACCUMULATES (+=): the
// analytic gradient is (after - before).
#include <gtest/gtest.h>

#include <vector>

#include "core/cpu/cpu_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::check_grad;
using test::delta;
using test::GradCheck;
using test::random_tokens;
using test::random_vec;
using test::weighted_sum;

#define EXPECT_GRAD_OK(r, what)                                                                              \
  EXPECT_LE((r).worst, 1.0) << what << ": element " << (r).at << " analytic " << (r).analytic << " numeric " \
                            << (r).numeric << " (" << (r).checked << " checked)"

std::size_t sz(long a) {
  return static_cast<std::size_t>(a);
}

// The checker must be able to fail: a gradient that is 5% off in one element, or has one sign flipped,
// is rejected.
TEST(CpuBackendGrad, CheckerRejectsWrongGradient) {
  std::vector<float> x = random_vec(20, 1);
  const std::vector<float> w = random_vec(20, 2);
  auto loss = [&] {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * x[i] * w[i];
    return s;
  };
  std::vector<float> grad(20);
  for (std::size_t i = 0; i < 20; ++i) grad[i] = 2 * x[i] * w[i];
  EXPECT_LE(check_grad(x, grad, loss).worst, 1.0);
  auto off = grad;
  off[7] = off[7] * 1.05f + (off[7] >= 0 ? 0.01f : -0.01f);
  EXPECT_GT(check_grad(x, off, loss).worst, 1.0);
  auto flipped = grad;
  flipped[3] = -flipped[3] + 0.01f;
  EXPECT_GT(check_grad(x, flipped, loss).worst, 1.0);
}

TEST(CpuBackendGrad, Encoder) {
  auto be = make_cpu_backend(2);
  const int B = 2, T = 4, C = 5, V = 3, maxT = 6;  // V = 3: tokens repeat
  auto tokens = random_tokens(sz(B * T), V, 3);
  auto wte = random_vec(sz(V * C), 4);
  auto wpe = random_vec(sz(maxT * C), 5);
  const auto w = random_vec(sz(B * T * C), 6);
  std::vector<float> out(sz(B * T * C));
  auto loss = [&] {
    be->encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out, w);
  };
  const auto dwte0 = random_vec(wte.size(), 7);
  const auto dwpe0 = random_vec(wpe.size(), 8);
  auto dwte = dwte0, dwpe = dwpe0;
  be->encoder_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
  GradCheck r = check_grad(wte, delta(dwte, dwte0), loss);
  EXPECT_GRAD_OK(r, "dwte");
  r = check_grad(wpe, delta(dwpe, dwpe0), loss);  // rows >= T must stay untouched (gradient 0)
  EXPECT_GRAD_OK(r, "dwpe");
}

TEST(CpuBackendGrad, Layernorm) {
  auto be = make_cpu_backend(2);
  const int N = 5, C = 12;
  auto x = random_vec(sz(N * C), 9, -1.0f, 2.0f);
  auto wt = random_vec(sz(C), 10, 0.5f, 1.5f);
  auto bias = random_vec(sz(C), 11);
  const auto w = random_vec(sz(N * C), 12);
  std::vector<float> out(x.size()), mean(N), rstd(N);
  auto loss = [&] {
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), wt.data(), bias.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();  // saved mean/rstd for backward
  const auto dx0 = random_vec(x.size(), 13), dw0 = random_vec(wt.size(), 14),
             db0 = random_vec(bias.size(), 15);
  auto dx = dx0, dw = dw0, db = db0;
  be->layernorm_backward(dx.data(), dw.data(), db.data(), w.data(), x.data(), wt.data(), mean.data(),
                         rstd.data(), N, C);
  GradCheck r = check_grad(x, delta(dx, dx0), loss, 1e-2f);
  EXPECT_GRAD_OK(r, "layernorm dinp");
  r = check_grad(wt, delta(dw, dw0), loss);
  EXPECT_GRAD_OK(r, "layernorm dweight");
  r = check_grad(bias, delta(db, db0), loss);
  EXPECT_GRAD_OK(r, "layernorm dbias");
  // nullptr gradients are skipped, the others still accumulate.
  auto dx2 = dx0;
  be->layernorm_backward(dx2.data(), nullptr, nullptr, w.data(), x.data(), wt.data(), mean.data(),
                         rstd.data(), N, C);
  EXPECT_TRUE(test::bit_equal(dx2, dx));
}

TEST(CpuBackendGrad, Matmul) {
  auto be = make_cpu_backend(2);
  const int N = 6, IC = 7, OC = 5;
  auto inp = random_vec(sz(N * IC), 16);
  auto wt = random_vec(sz(OC * IC), 17);
  auto bias = random_vec(sz(OC), 18);
  const auto w = random_vec(sz(N * OC), 19);
  std::vector<float> out(sz(N * OC));
  auto loss = [&] {
    be->matmul_forward(out.data(), inp.data(), wt.data(), bias.data(), N, IC, OC);
    return weighted_sum(out, w);
  };
  const auto di0 = random_vec(inp.size(), 20), dw0 = random_vec(wt.size(), 21),
             db0 = random_vec(bias.size(), 22);
  auto di = di0, dw = dw0, db = db0;
  be->matmul_backward(di.data(), dw.data(), db.data(), w.data(), inp.data(), wt.data(), N, IC, OC);
  GradCheck r = check_grad(inp, delta(di, di0), loss);
  EXPECT_GRAD_OK(r, "matmul dinp");
  r = check_grad(wt, delta(dw, dw0), loss);
  EXPECT_GRAD_OK(r, "matmul dweight");
  r = check_grad(bias, delta(db, db0), loss);
  EXPECT_GRAD_OK(r, "matmul dbias");
  // Any subset of gradients may be requested.
  auto dw2 = dw0;
  be->matmul_backward(nullptr, dw2.data(), nullptr, w.data(), inp.data(), wt.data(), N, IC, OC);
  EXPECT_TRUE(test::bit_equal(dw2, dw));
}

void check_attention(int B, int T, int C, int NH, std::size_t max_checks,
                     AttentionMask mask = AttentionMask::Causal) {
  auto be = make_cpu_backend(2);
  auto qkv = random_vec(sz(static_cast<long>(B) * T * 3 * C), 23, -1.5f, 1.5f);
  const auto w = random_vec(sz(static_cast<long>(B) * T * C), 24);
  std::vector<float> out(w.size()), att(sz(static_cast<long>(B) * NH * T * T));
  auto loss = [&] {
    be->attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, mask);
    return weighted_sum(out, w);
  };
  loss();
  const auto dqkv0 = random_vec(qkv.size(), 25);
  auto dqkv = dqkv0;
  std::vector<float> scratch(att.size(), 123.0f);  // garbage on entry must not matter
  be->attention_backward(dqkv.data(), scratch.data(), w.data(), qkv.data(), att.data(), B, T, C, NH, mask);
  GradCheck r = check_grad(qkv, delta(dqkv, dqkv0), loss, 1e-2f, 2e-3, 1e-2, max_checks);
  EXPECT_GRAD_OK(r, "attention dqkv T=" << T);
}

TEST(CpuBackendGrad, Attention) {
  check_attention(2, 6, 8, 2, 400);
}
// T = 140 crosses the backend's 128-row causal block boundary; a strided sample of elements is checked.
TEST(CpuBackendGrad, AttentionTwoRowBlocks) {
  check_attention(1, 140, 8, 2, 250);
}
TEST(CpuBackendGrad, AttentionBidirectional) {
  check_attention(2, 6, 8, 2, 400, AttentionMask::Bidirectional);
  check_attention(1, 140, 8, 2, 250, AttentionMask::Bidirectional);
}

TEST(CpuBackendGrad, AddBias) {
  // The gradient of add_bias is matmul_backward's dbias alone.
  auto be = make_cpu_backend(2);
  const int N = 6, C = 5;
  const auto x0 = random_vec(sz(N * C), 32);
  auto bias = random_vec(sz(C), 33);
  const auto w = random_vec(sz(N * C), 34);
  std::vector<float> x(x0.size());
  auto loss = [&] {
    x = x0;
    be->add_bias(x.data(), bias.data(), N, C);
    return weighted_sum(x, w);
  };
  const auto db0 = random_vec(sz(C), 35);
  auto db = db0;
  be->matmul_backward(nullptr, nullptr, db.data(), w.data(), nullptr, nullptr, N, C, C);
  GradCheck r = check_grad(bias, delta(db, db0), loss);
  EXPECT_GRAD_OK(r, "add_bias dbias");
}

TEST(CpuBackendGrad, Gelu) {
  auto be = make_cpu_backend(2);
  const std::size_t n = 200;
  auto x = random_vec(n, 26, -5.0f, 5.0f);
  const auto w = random_vec(n, 27);
  std::vector<float> out(n);
  auto loss = [&] {
    be->gelu_forward(out.data(), x.data(), n);
    return weighted_sum(out, w);
  };
  const auto dx0 = random_vec(n, 28);
  auto dx = dx0;
  be->gelu_backward(dx.data(), x.data(), w.data(), n);
  GradCheck r = check_grad(x, delta(dx, dx0), loss, 1e-3f, 1e-3, 1e-2);
  EXPECT_GRAD_OK(r, "gelu dinp");
}

TEST(CpuBackendGrad, SoftmaxXent) {
  auto be = make_cpu_backend(2);
  const int N = 4, V = 13, Vp = 16;
  auto logits = random_vec(sz(N * Vp), 29, -3.0f, 3.0f);
  auto targets = random_tokens(sz(N), V, 30);
  targets[2] = kIgnoreTarget;    // a position a masked LM does not predict: no loss, no gradient
  const float dloss = 1.0f / N;  // loss = mean over rows
  std::vector<float> losses(N), probs(logits.size());
  auto loss = [&] {
    be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
    double s = 0;
    for (float l : losses) s += l;
    return s * dloss;
  };
  loss();
  const auto d0 = random_vec(logits.size(), 31);
  auto d = d0;
  be->softmax_xent_backward(d.data(), probs.data(), targets.data(), N, V, Vp, dloss);
  GradCheck r = check_grad(logits, delta(d, d0), loss);  // padded columns: numeric 0, analytic 0
  EXPECT_GRAD_OK(r, "xent dlogits");
  for (int n = 0; n < N; ++n)
    for (int i = V; i < Vp; ++i) EXPECT_EQ(d[sz(n * Vp + i)], d0[sz(n * Vp + i)]) << "padded column touched";
}

}  // namespace
}  // namespace tt
