// CPU backend CNN ops: forward against naive references, every backward by finite differences (and
// conv backward also against a naive reference on shapes too large to difference), accumulation,
// and determinism (run to run, and across thread counts for everything but sgemm and oneDNN).
// The conv tests run for both implementations (cpu_conv.h): the im2col + sgemm reference and oneDNN
// (skipped in a build without it); oneDNN is also checked against the reference on ResNet-18's shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_conv.h"
#include "core/shape_checks.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::bit_equal;
using test::check_grad;
using test::delta;
using test::GradCheck;
using test::random_vec;
using test::weighted_sum;

std::size_t sz(long long n) {
  return static_cast<std::size_t>(n);
}

#define EXPECT_GRAD_OK(r, what)                                                                              \
  EXPECT_LE((r).worst, 1.0) << what << ": element " << (r).at << " analytic " << (r).analytic << " numeric " \
                            << (r).numeric << " (" << (r).checked << " checked)"

// ---- naive references ---------------------------------------------------------------------------

std::vector<double> conv_ref(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                             const Conv2dShape& s) {
  const int OH = s.OH(), OW = s.OW();
  std::vector<double> out(sz(1LL * s.B * s.OC * OH * OW));
  for (int b = 0; b < s.B; ++b)
    for (int oc = 0; oc < s.OC; ++oc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          double acc = bias ? bias[oc] : 0.0;
          for (int ic = 0; ic < s.IC; ++ic)
            for (int kh = 0; kh < s.KH; ++kh)
              for (int kw = 0; kw < s.KW; ++kw) {
                const int ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                acc += static_cast<double>(x[sz(((1LL * b * s.IC + ic) * s.H + ih) * s.W + iw)]) *
                       w[sz(((1LL * oc * s.IC + ic) * s.KH + kh) * s.KW + kw)];
              }
          out[sz(((1LL * b * s.OC + oc) * OH + oh) * OW + ow)] = acc;
        }
  return out;
}

// dx, dw of sum(out * g) by direct summation.
void conv_backward_ref(std::vector<double>& dx, std::vector<double>& dw, const std::vector<float>& x,
                       const std::vector<float>& w, const std::vector<float>& g, const Conv2dShape& s) {
  const int OH = s.OH(), OW = s.OW();
  dx.assign(x.size(), 0.0);
  dw.assign(w.size(), 0.0);
  for (int b = 0; b < s.B; ++b)
    for (int oc = 0; oc < s.OC; ++oc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          const double go = g[sz(((1LL * b * s.OC + oc) * OH + oh) * OW + ow)];
          for (int ic = 0; ic < s.IC; ++ic)
            for (int kh = 0; kh < s.KH; ++kh)
              for (int kw = 0; kw < s.KW; ++kw) {
                const int ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                const std::size_t xi = sz(((1LL * b * s.IC + ic) * s.H + ih) * s.W + iw);
                const std::size_t wi = sz(((1LL * oc * s.IC + ic) * s.KH + kh) * s.KW + kw);
                dx[xi] += go * w[wi];
                dw[wi] += go * x[xi];
              }
        }
}

template <typename A, typename B>
double max_rel_err(const A& got, const B& want) {
  double scale = 1e-6, worst = 0;
  for (auto v : want) scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])) / scale);
  return worst;
}

struct ConvCase {
  Conv2dShape s;
  const char* what;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{2, 3, 7, 6, 4, 3, 3, 1, 1}, "3x3 s1 p1"},   {{2, 3, 9, 8, 5, 3, 3, 2, 1}, "3x3 s2 p1"},
      {{3, 4, 5, 5, 6, 1, 1, 1, 0}, "1x1 s1"},      {{2, 4, 7, 7, 3, 1, 1, 2, 0}, "1x1 s2"},
      {{2, 3, 11, 10, 4, 7, 7, 2, 3}, "7x7 s2 p3"}, {{1, 2, 4, 5, 3, 3, 2, 1, 0}, "3x2 no pad"},
  };
}

// The conv implementations this build has, with a name for failure messages.
std::vector<std::pair<CpuConv, std::string>> conv_impls() {
  std::vector<std::pair<CpuConv, std::string>> v{{CpuConv::Reference, "im2col"}};
  if (cpu::dnnl_available()) v.emplace_back(CpuConv::Dnnl, "oneDNN");
  return v;
}

Conv2dShape chunked_shape() {
  // (2K + OC) * OH * OW = (288 + 8) * 1024 floats per image: the 16 MiB chunk holds 13 images, so
  // this batch of 16 runs as two chunks (13 + 3).
  return {16, 16, 32, 32, 8, 3, 3, 1, 1};
}

TEST(CnnOps, Conv2dForwardMatchesNaive) {
  for (const auto& [impl, impl_name] : conv_impls()) {
    SCOPED_TRACE(impl_name);
    auto be = make_cpu_backend(2, impl);
    auto cases = conv_cases();
    cases.push_back({chunked_shape(), "chunked batch"});
    for (const auto& c : cases) {
      const auto& s = c.s;
      auto x = random_vec(sz(1LL * s.B * s.IC * s.H * s.W), 1);
      auto w = random_vec(sz(1LL * s.OC * s.IC * s.KH * s.KW), 2);
      auto bias = random_vec(sz(s.OC), 3);
      std::vector<float> ws(be->conv2d_workspace_floats(s));
      std::vector<float> out(sz(1LL * s.B * s.OC * s.OH() * s.OW()), 123.0f);
      be->conv2d_forward(out.data(), x.data(), w.data(), bias.data(), ws.data(), s);
      EXPECT_LE(max_rel_err(out, conv_ref(x, w, bias.data(), s)), 1e-5) << c.what;
      be->conv2d_forward(out.data(), x.data(), w.data(), nullptr, ws.data(), s);
      EXPECT_LE(max_rel_err(out, conv_ref(x, w, nullptr, s)), 1e-5) << c.what << " (no bias)";
    }
  }
}

TEST(CnnOps, Conv2dBackwardMatchesNaiveAndAccumulates) {
  for (const auto& [impl, impl_name] : conv_impls()) {
    SCOPED_TRACE(impl_name);
    auto be = make_cpu_backend(2, impl);
    auto cases = conv_cases();
    cases.push_back({chunked_shape(), "chunked batch"});
    for (const auto& c : cases) {
      const auto& s = c.s;
      auto x = random_vec(sz(1LL * s.B * s.IC * s.H * s.W), 4);
      auto w = random_vec(sz(1LL * s.OC * s.IC * s.KH * s.KW), 5);
      auto g = random_vec(sz(1LL * s.B * s.OC * s.OH() * s.OW()), 6);
      std::vector<float> ws(be->conv2d_workspace_floats(s));
      auto dx0 = random_vec(x.size(), 7), dw0 = random_vec(w.size(), 8), db0 = random_vec(sz(s.OC), 9);
      auto dx = dx0, dw = dw0, db = db0;
      be->conv2d_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), ws.data(), s);
      std::vector<double> rdx, rdw;
      conv_backward_ref(rdx, rdw, x, w, g, s);
      EXPECT_LE(max_rel_err(delta(dx, dx0), rdx), 1e-5) << c.what << " dinp";
      EXPECT_LE(max_rel_err(delta(dw, dw0), rdw), 1e-5) << c.what << " dweight";
      std::vector<double> rdb(sz(s.OC), 0.0);
      const int OHW = s.OH() * s.OW();
      for (int b = 0; b < s.B; ++b)
        for (int oc = 0; oc < s.OC; ++oc)
          for (int i = 0; i < OHW; ++i) rdb[sz(oc)] += g[sz((1LL * b * s.OC + oc) * OHW + i)];
      EXPECT_LE(max_rel_err(delta(db, db0), rdb), 1e-5) << c.what << " dbias";
    }
  }
}

TEST(CnnOps, Conv2dGradCheck) {
  for (const auto& [impl, impl_name] : conv_impls()) {
    SCOPED_TRACE(impl_name);
    auto be = make_cpu_backend(2, impl);
    for (const auto& c : conv_cases()) {
      const auto& s = c.s;
      auto x = random_vec(sz(1LL * s.B * s.IC * s.H * s.W), 11);
      auto w = random_vec(sz(1LL * s.OC * s.IC * s.KH * s.KW), 12);
      auto bias = random_vec(sz(s.OC), 13);
      auto gw = random_vec(sz(1LL * s.B * s.OC * s.OH() * s.OW()), 14);
      std::vector<float> ws(be->conv2d_workspace_floats(s));
      std::vector<float> out(gw.size());
      auto loss = [&] {
        be->conv2d_forward(out.data(), x.data(), w.data(), bias.data(), ws.data(), s);
        return weighted_sum(out, gw);
      };
      std::vector<float> dx(x.size()), dw(w.size()), db(bias.size());
      be->conv2d_backward(dx.data(), dw.data(), db.data(), gw.data(), x.data(), w.data(), ws.data(), s);
      GradCheck r = check_grad(x, dx, loss);
      EXPECT_GRAD_OK(r, std::string(c.what) + " dinp");
      r = check_grad(w, dw, loss);
      EXPECT_GRAD_OK(r, std::string(c.what) + " dweight");
      r = check_grad(bias, db, loss);
      EXPECT_GRAD_OK(r, std::string(c.what) + " dbias");
    }
  }
}

TEST(CnnOps, BatchnormForwardTrainingAndEval) {
  auto be = make_cpu_backend(2);
  const int B = 3, C = 4, HW = 10;
  auto x = random_vec(sz(B * C * HW), 21, -1.0f, 3.0f);
  auto wt = random_vec(sz(C), 22, 0.5f, 1.5f);
  auto bs = random_vec(sz(C), 23);
  std::vector<float> out(x.size()), mean(sz(C)), rstd(sz(C));
  std::vector<float> rm(sz(C), 0.5f), rv(sz(C), 2.0f);
  be->batchnorm_forward(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), wt.data(),
                        bs.data(), B, C, HW, 0.1f, 1e-5f, true);
  const int M = B * HW;
  for (int c = 0; c < C; ++c) {
    double m = 0, v = 0;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < HW; ++i) m += x[sz((b * C + c) * HW + i)];
    m /= M;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < HW; ++i) v += std::pow(x[sz((b * C + c) * HW + i)] - m, 2);
    const double var = v / M;
    EXPECT_NEAR(mean[sz(c)], m, 1e-6);
    EXPECT_NEAR(rstd[sz(c)], 1.0 / std::sqrt(var + 1e-5), 1e-5);
    EXPECT_NEAR(rm[sz(c)], 0.9 * 0.5 + 0.1 * m, 1e-6);
    EXPECT_NEAR(rv[sz(c)], 0.9 * 2.0 + 0.1 * v / (M - 1), 1e-5);  // unbiased, as PyTorch
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < HW; ++i) {
        const std::size_t k = sz((b * C + c) * HW + i);
        EXPECT_NEAR(out[k], (x[k] - m) / std::sqrt(var + 1e-5) * wt[sz(c)] + bs[sz(c)], 2e-5);
      }
  }
  // Eval: running statistics, which stay unchanged.
  const auto rm1 = rm, rv1 = rv;
  be->batchnorm_forward(out.data(), nullptr, nullptr, rm.data(), rv.data(), x.data(), wt.data(), bs.data(), B,
                        C, HW, 0.1f, 1e-5f, false);
  EXPECT_TRUE(bit_equal(rm, rm1));
  EXPECT_TRUE(bit_equal(rv, rv1));
  for (int c = 0; c < C; ++c) {
    const std::size_t k = sz((2 * C + c) * HW + 3);
    EXPECT_NEAR(out[k], (x[k] - rm[sz(c)]) / std::sqrt(rv[sz(c)] + 1e-5) * wt[sz(c)] + bs[sz(c)], 1e-5);
  }
}

TEST(CnnOps, BatchnormGradCheck) {
  auto be = make_cpu_backend(2);
  const int B = 3, C = 3, HW = 6;
  auto x = random_vec(sz(B * C * HW), 31, -1.0f, 2.0f);
  auto wt = random_vec(sz(C), 32, 0.5f, 1.5f);
  auto bs = random_vec(sz(C), 33);
  auto gw = random_vec(x.size(), 34);
  std::vector<float> out(x.size()), mean(sz(C)), rstd(sz(C)), rm(sz(C)), rv(sz(C));
  auto loss = [&] {
    be->batchnorm_forward(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), wt.data(),
                          bs.data(), B, C, HW, 0.1f, 1e-5f, true);
    return weighted_sum(out, gw);
  };
  loss();
  auto dx0 = random_vec(x.size(), 35), dw0 = random_vec(sz(C), 36), db0 = random_vec(sz(C), 37);
  auto dx = dx0, dw = dw0, db = db0;
  be->batchnorm_backward(dx.data(), dw.data(), db.data(), gw.data(), x.data(), wt.data(), mean.data(),
                         rstd.data(), B, C, HW);
  GradCheck r = check_grad(x, delta(dx, dx0), loss, 1e-2f);
  EXPECT_GRAD_OK(r, "bn dinp");
  r = check_grad(wt, delta(dw, dw0), loss);
  EXPECT_GRAD_OK(r, "bn dweight");
  r = check_grad(bs, delta(db, db0), loss);
  EXPECT_GRAD_OK(r, "bn dbias");
}

TEST(CnnOps, ReluForwardBackward) {
  auto be = make_cpu_backend(2);
  auto x = random_vec(1000, 41);
  std::vector<float> out(x.size());
  be->relu_forward(out.data(), x.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[i], std::max(x[i], 0.0f));
  auto g = random_vec(x.size(), 42);
  std::vector<float> d(x.size(), 1.0f);
  be->relu_backward(d.data(), out.data(), g.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(d[i], 1.0f + (x[i] > 0 ? g[i] : 0.0f));
  // In place.
  be->relu_forward(x.data(), x.data(), x.size());
  EXPECT_TRUE(bit_equal(x, out));
}

TEST(CnnOps, MaxpoolForwardAndGradCheck) {
  auto be = make_cpu_backend(2);
  for (Pool2dShape s : {Pool2dShape{2, 3, 9, 8, 3, 2, 1}, Pool2dShape{1, 2, 6, 6, 2, 2, 0}}) {
    auto x = random_vec(sz(1LL * s.B * s.C * s.H * s.W), 51);
    const int OH = s.OH(), OW = s.OW();
    std::vector<float> out(sz(1LL * s.B * s.C * OH * OW));
    std::vector<int32_t> am(out.size());
    be->maxpool2d_forward(out.data(), am.data(), x.data(), s);
    for (int p = 0; p < s.B * s.C; ++p)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          for (int kh = 0; kh < s.k; ++kh)
            for (int kw = 0; kw < s.k; ++kw) {
              const int ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
              if (ih >= 0 && ih < s.H && iw >= 0 && iw < s.W)
                best = std::max(best, x[sz((p * s.H + ih) * s.W + iw)]);
            }
          const std::size_t o = sz((p * OH + oh) * OW + ow);
          EXPECT_EQ(out[o], best);
          EXPECT_EQ(x[sz(p * s.H * s.W + am[o])], best);
        }
    auto gw = random_vec(out.size(), 52);
    auto loss = [&] {
      be->maxpool2d_forward(out.data(), am.data(), x.data(), s);
      return weighted_sum(out, gw);
    };
    loss();
    std::vector<float> dx(x.size());
    be->maxpool2d_backward(dx.data(), gw.data(), am.data(), s);
    GradCheck r = check_grad(x, dx, loss, 1e-3f);  // small step: stay inside the argmax region
    EXPECT_GRAD_OK(r, "maxpool dinp");
  }
}

TEST(CnnOps, AvgpoolAndGlobalAvgpool) {
  auto be = make_cpu_backend(2);
  const Pool2dShape s{2, 3, 7, 6, 3, 2, 1};
  auto x = random_vec(sz(1LL * s.B * s.C * s.H * s.W), 61);
  std::vector<float> out(sz(1LL * s.B * s.C * s.OH() * s.OW()));
  be->avgpool2d_forward(out.data(), x.data(), s);
  // Corner output (0, 0): window rows/cols -1..1 with zero padding counted (divisor 9).
  const double corner = (x[0] + x[1] + x[sz(s.W)] + x[sz(s.W + 1)]) / 9.0;
  EXPECT_NEAR(out[0], corner, 1e-6);
  auto gw = random_vec(out.size(), 62);
  auto loss = [&] {
    be->avgpool2d_forward(out.data(), x.data(), s);
    return weighted_sum(out, gw);
  };
  std::vector<float> dx(x.size());
  be->avgpool2d_backward(dx.data(), gw.data(), s);
  GradCheck r = check_grad(x, dx, loss);
  EXPECT_GRAD_OK(r, "avgpool dinp");

  const int B = 2, C = 3, HW = 5;
  auto y = random_vec(sz(B * C * HW), 63);
  std::vector<float> gap(sz(B * C));
  be->global_avgpool_forward(gap.data(), y.data(), B, C, HW);
  double m = 0;
  for (int i = 0; i < HW; ++i) m += y[sz(HW + i)];
  EXPECT_NEAR(gap[1], m / HW, 1e-6);
  auto gg = random_vec(gap.size(), 64);
  auto gloss = [&] {
    be->global_avgpool_forward(gap.data(), y.data(), B, C, HW);
    return weighted_sum(gap, gg);
  };
  std::vector<float> dy(y.size());
  be->global_avgpool_backward(dy.data(), gg.data(), B, C, HW);
  r = check_grad(y, dy, gloss);
  EXPECT_GRAD_OK(r, "global avgpool dinp");
}

TEST(CnnOps, DeterministicAcrossRunsAndThreads) {
  auto be1 = make_cpu_backend(1);
  auto be2 = make_cpu_backend(2);
  const Conv2dShape s = chunked_shape();
  auto x = random_vec(sz(1LL * s.B * s.IC * s.H * s.W), 71);
  auto w = random_vec(sz(1LL * s.OC * s.IC * s.KH * s.KW), 72);
  auto g = random_vec(sz(1LL * s.B * s.OC * s.OH() * s.OW()), 73);
  std::vector<float> ws(be2->conv2d_workspace_floats(s));
  auto conv_bwd = [&](Backend& be) {
    std::vector<float> dx(x.size()), dw(w.size()), db(sz(s.OC));
    be.conv2d_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), ws.data(), s);
    dx.insert(dx.end(), dw.begin(), dw.end());
    dx.insert(dx.end(), db.begin(), db.end());
    return dx;
  };
  EXPECT_TRUE(bit_equal(conv_bwd(*be2), conv_bwd(*be2)));  // sgemm: same thread count, same bits

  // Non-gemm ops: identical bits for 1 and 2 threads (large enough to run in parallel).
  const int B = 8, C = 16, HW = 1024;
  auto y = random_vec(sz(B * C * HW), 74, -1.0f, 2.0f);
  auto wt = random_vec(sz(C), 75), bs = random_vec(sz(C), 76), gy = random_vec(y.size(), 77);
  auto bn = [&](Backend& be) {
    std::vector<float> out(y.size()), mean(sz(C)), rstd(sz(C)), rm(sz(C)), rv(sz(C), 1.0f);
    be.batchnorm_forward(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), y.data(), wt.data(),
                         bs.data(), B, C, HW, 0.1f, 1e-5f, true);
    std::vector<float> dx(y.size()), dw(sz(C)), db(sz(C));
    be.batchnorm_backward(dx.data(), dw.data(), db.data(), gy.data(), y.data(), wt.data(), mean.data(),
                          rstd.data(), B, C, HW);
    const Pool2dShape ps{B, C, 32, 32, 3, 2, 1};
    std::vector<float> po(sz(1LL * B * C * ps.OH() * ps.OW()));
    std::vector<int32_t> am(po.size());
    be.maxpool2d_forward(po.data(), am.data(), y.data(), ps);
    std::vector<float> dpool(y.size());
    be.maxpool2d_backward(dpool.data(), po.data(), am.data(), ps);
    for (auto* v : {&dx, &dw, &db, &rm, &rv, &po, &dpool}) out.insert(out.end(), v->begin(), v->end());
    return out;
  };
  EXPECT_TRUE(bit_equal(bn(*be1), bn(*be2)));
}

// ---- oneDNN against the reference -----------------------------------------------------------------

// Every distinct conv of ResNet-18 at 32x32 (both stems), and its last stage at 2x2 and 1x1.
std::vector<Conv2dShape> resnet18_shapes(int B) {
  return {
      {B, 3, 32, 32, 64, 3, 3, 1, 1},    {B, 3, 32, 32, 64, 7, 7, 2, 3},    {B, 64, 32, 32, 64, 3, 3, 1, 1},
      {B, 64, 32, 32, 128, 3, 3, 2, 1},  {B, 64, 32, 32, 128, 1, 1, 2, 0},  {B, 128, 16, 16, 128, 3, 3, 1, 1},
      {B, 128, 16, 16, 256, 3, 3, 2, 1}, {B, 128, 16, 16, 256, 1, 1, 2, 0}, {B, 256, 8, 8, 256, 3, 3, 1, 1},
      {B, 256, 8, 8, 512, 3, 3, 2, 1},   {B, 256, 8, 8, 512, 1, 1, 2, 0},   {B, 512, 4, 4, 512, 3, 3, 1, 1},
      {B, 256, 2, 2, 512, 3, 3, 2, 1},   {B, 512, 1, 1, 512, 3, 3, 1, 1},   {B, 1, 28, 28, 16, 3, 3, 1, 1},
  };
}

// out, dinp, dweight, dbias of one forward + backward (gradients accumulated onto fixed values).
std::vector<std::vector<float>> conv_run(Backend& be, const Conv2dShape& s, bool bias) {
  auto x = random_vec(sz(1LL * s.B * s.IC * s.H * s.W), 81);
  auto w = random_vec(sz(1LL * s.OC * s.IC * s.KH * s.KW), 82, -0.2f, 0.2f);
  auto b = random_vec(sz(s.OC), 83);
  auto g = random_vec(sz(1LL * s.B * s.OC * s.OH() * s.OW()), 84);
  std::vector<float> ws(be.conv2d_workspace_floats(s)), out(g.size());
  auto dx = random_vec(x.size(), 85), dw = random_vec(w.size(), 86), db = random_vec(b.size(), 87);
  be.conv2d_forward(out.data(), x.data(), w.data(), bias ? b.data() : nullptr, ws.data(), s);
  be.conv2d_backward(dx.data(), dw.data(), bias ? db.data() : nullptr, g.data(), x.data(), w.data(),
                     ws.data(), s);
  return {out, dx, dw, db};
}

TEST(CnnOps, DnnlMatchesReferenceOnResnet18Shapes) {
  if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  auto ref = make_cpu_backend(2, CpuConv::Reference);
  auto dnnl = make_cpu_backend(2, CpuConv::Dnnl);
  const char* names[] = {"out", "dinp", "dweight", "dbias"};
  for (const Conv2dShape& s : resnet18_shapes(3)) {
    const auto want = conv_run(*ref, s, true);
    const auto got = conv_run(*dnnl, s, true);
    for (std::size_t i = 0; i < want.size(); ++i) {
      // Both are FP32 with different summation orders: compare relative to the tensor's largest value.
      EXPECT_LE(max_rel_err(got[i], want[i]), 1e-5) << shape_string(s) << " " << names[i];
    }
  }
}

TEST(CnnOps, DnnlBitIdenticalAcrossRunsAndInstances) {
  if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  // Same thread count -> same bits: the same backend twice (cached primitives) and a fresh backend
  // (primitives created again), for 1 and 2 threads, on shapes where oneDNN's backward-weights
  // reduction is split across threads.
  for (int threads : {1, 2}) {
    auto a = make_cpu_backend(threads, CpuConv::Dnnl);
    auto b = make_cpu_backend(threads, CpuConv::Dnnl);
    for (const Conv2dShape& s :
         {Conv2dShape{8, 64, 16, 16, 64, 3, 3, 1, 1}, Conv2dShape{8, 64, 16, 16, 128, 1, 1, 2, 0},
          Conv2dShape{8, 3, 32, 32, 64, 7, 7, 2, 3}}) {
      const auto first = conv_run(*a, s, false);
      const auto again = conv_run(*a, s, false);
      const auto fresh = conv_run(*b, s, false);
      for (std::size_t i = 0; i < first.size(); ++i) {
        EXPECT_TRUE(bit_equal(first[i], again[i])) << threads << " threads, " << shape_string(s) << " #" << i;
        EXPECT_TRUE(bit_equal(first[i], fresh[i])) << threads << " threads, " << shape_string(s) << " #" << i;
      }
    }
  }
}

TEST(CnnOps, DnnlPinsDirectAlgorithm) {
  if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  auto be = make_cpu_backend(2, CpuConv::Dnnl);
  auto& cpu = dynamic_cast<CpuBackend&>(*be);
  EXPECT_EQ(cpu.conv_impl(), CpuConv::Dnnl);
  EXPECT_NE(be->describe().find("oneDNN"), std::string::npos) << be->describe();
  for (const Conv2dShape& s : resnet18_shapes(32)) {
    const std::string impl = cpu.conv_implementations(s);
    EXPECT_EQ(impl.find("wino"), std::string::npos) << impl;
    EXPECT_NE(impl.find("bwd_w"), std::string::npos) << impl;
  }
  // Auto (what training runs): oneDNN, but im2col + sgemm for outputs of 4x4 and smaller.
  auto autob = make_cpu_backend(2);
  auto& a = dynamic_cast<CpuBackend&>(*autob);
  EXPECT_EQ(a.conv_impl(), CpuConv::Auto);
  EXPECT_TRUE(a.conv_on_dnnl({32, 64, 32, 32, 64, 3, 3, 1, 1}));
  EXPECT_TRUE(a.conv_on_dnnl({32, 256, 8, 8, 256, 3, 3, 1, 1}));
  EXPECT_FALSE(a.conv_on_dnnl({32, 256, 8, 8, 512, 3, 3, 2, 1}));
  EXPECT_FALSE(a.conv_on_dnnl({32, 512, 1, 1, 512, 3, 3, 1, 1}));
  EXPECT_TRUE(cpu.conv_on_dnnl({32, 512, 1, 1, 512, 3, 3, 1, 1}));  // Dnnl: every shape
  EXPECT_EQ(dynamic_cast<CpuBackend&>(*make_cpu_backend(2, CpuConv::Reference))
                .conv_implementations(resnet18_shapes(1)[0]),
            "");
}

}  // namespace
}  // namespace tt
