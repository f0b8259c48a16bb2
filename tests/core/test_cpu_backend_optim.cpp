// Optimizer steps of the CPU backend against hand-computed values and a double-precision transcription
// of torch.optim.AdamW / torch.optim.SGD.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::random_vec;

TEST(CpuBackendOptim, AdamWFirstStepByHand) {
  // Step 1: mhat = g, vhat = g^2, so p1 = p0 * (1 - lr*wd) - lr * g / (|g| + eps).
  auto be = make_cpu_backend(1);
  AdamWConfig cfg;
  cfg.lr = 0.1f;
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.999f;
  cfg.eps = 1e-8f;
  cfg.weight_decay = 0.01f;
  std::vector<float> p{1.0f, -2.0f, 0.5f}, g{0.5f, -0.25f, 0.0f}, m(3), v(3);
  be->adamw_update(p.data(), g.data(), m.data(), v.data(), 3, cfg, 1.0f, 1);
  EXPECT_NEAR(p[0], 0.999f - 0.1f, 1e-6);          // 1 * 0.999 - 0.1
  EXPECT_NEAR(p[1], -2.0f * 0.999f + 0.1f, 1e-6);  // -1.998 + 0.1
  EXPECT_NEAR(p[2], 0.5f * 0.999f, 1e-7);          // zero gradient: decay only
  EXPECT_NEAR(m[0], 0.05f, 1e-7);                  // (1 - 0.9) * 0.5
  EXPECT_NEAR(v[0], 0.00025f, 1e-8);  // beta2 = 0.999f is itself 5e-9 off               // (1 - 0.999) * 0.25
  // Step 2 with the same gradient, by hand: m = 0.095, v = 0.00049975,
  // mhat = 0.095 / 0.19 = 0.5, vhat = 0.00049975 / 0.001999 = 0.25 -> update = lr * 0.5 / 0.5 = 0.1.
  be->adamw_update(p.data(), g.data(), m.data(), v.data(), 3, cfg, 1.0f, 2);
  EXPECT_NEAR(m[0], 0.095f, 1e-7);
  EXPECT_NEAR(v[0], 0.00049975f, 2e-8);
  EXPECT_NEAR(p[0], 0.899f * 0.999f - 0.1f, 1e-6);
}

// torch.optim.AdamW (single tensor path) transcribed in double.
void ref_adamw(std::vector<double>& p, const std::vector<float>& g, std::vector<double>& m,
               std::vector<double>& v, const AdamWConfig& c, double gs, long t) {
  const double bc1 = 1 - std::pow(static_cast<double>(c.beta1), static_cast<double>(t));
  const double bc2 = 1 - std::pow(static_cast<double>(c.beta2), static_cast<double>(t));
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double gi = g[i] * gs;
    p[i] *= 1 - static_cast<double>(c.lr) * c.weight_decay;
    m[i] = c.beta1 * m[i] + (1 - static_cast<double>(c.beta1)) * gi;
    v[i] = c.beta2 * v[i] + (1 - static_cast<double>(c.beta2)) * gi * gi;
    p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
  }
}

TEST(CpuBackendOptim, AdamWTenStepsMatchReference) {
  auto be = make_cpu_backend(2);
  AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.weight_decay = 0.1f;
  const std::size_t n = 100'003;  // parallel path
  auto p = random_vec(n, 1);
  std::vector<float> m(n), v(n);
  std::vector<double> pr(p.begin(), p.end()), mr(n), vr(n);
  for (long step = 1; step <= 10; ++step) {
    const auto g = random_vec(n, static_cast<std::uint32_t>(100 + step));
    be->adamw_update(p.data(), g.data(), m.data(), v.data(), n, cfg, 0.5f, step);
    ref_adamw(pr, g, mr, vr, cfg, 0.5, step);
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(p[i] - pr[i]));
  EXPECT_LT(worst, 2e-6);
}

TEST(CpuBackendOptim, GradScaleIsAppliedFirst) {
  auto be = make_cpu_backend(1);
  AdamWConfig cfg;
  auto p1 = random_vec(64, 2), p2 = p1;
  const auto g = random_vec(64, 3);
  std::vector<float> g2(64), m1(64), v1(64), m2(64), v2(64);
  for (std::size_t i = 0; i < 64; ++i) g2[i] = g[i] * 4.0f;  // exact in float
  be->adamw_update(p1.data(), g.data(), m1.data(), v1.data(), 64, cfg, 1.0f, 1);
  be->adamw_update(p2.data(), g2.data(), m2.data(), v2.data(), 64, cfg, 0.25f, 1);
  EXPECT_TRUE(test::bit_equal(p1, p2));
  EXPECT_TRUE(test::bit_equal(m1, m2));
}

TEST(CpuBackendOptim, SgdMomentumByHand) {
  auto be = make_cpu_backend(1);
  SgdConfig cfg;
  cfg.lr = 0.1f;
  cfg.momentum = 0.9f;
  cfg.weight_decay = 0.0f;
  std::vector<float> p{1.0f}, g{0.5f}, buf{0.0f};
  be->sgd_update(p.data(), g.data(), buf.data(), 1, cfg, 1.0f);
  EXPECT_FLOAT_EQ(buf[0], 0.5f);  // first step: buf = g
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  be->sgd_update(p.data(), g.data(), buf.data(), 1, cfg, 1.0f);
  EXPECT_FLOAT_EQ(buf[0], 0.95f);  // 0.9 * 0.5 + 0.5
  EXPECT_FLOAT_EQ(p[0], 0.855f);   // 0.95 - 0.1 * 0.95
  // Weight decay adds wd * p to the gradient (L2), before momentum: g' = 0.5 + 0.1 * 2 = 0.7.
  cfg.weight_decay = 0.1f;
  std::vector<float> q{2.0f}, qb{0.0f};
  be->sgd_update(q.data(), g.data(), qb.data(), 1, cfg, 1.0f);
  EXPECT_FLOAT_EQ(qb[0], 0.7f);
  EXPECT_FLOAT_EQ(q[0], 1.93f);
  // grad_scale multiplies the raw gradient only: g' = 0.5 * 2 + 0.1 * 1.93 = 1.193.
  qb[0] = 0.0f;
  be->sgd_update(q.data(), g.data(), qb.data(), 1, cfg, 2.0f);
  EXPECT_FLOAT_EQ(qb[0], 1.193f);
}

TEST(CpuBackendOptim, SgdParallelMatchesScalar) {
  auto be = make_cpu_backend(2);
  SgdConfig cfg;
  cfg.weight_decay = 0.01f;
  const std::size_t n = 70'001;
  auto p = random_vec(n, 4);
  std::vector<float> buf(n);
  auto pr = p;
  std::vector<float> br(n);
  for (int step = 0; step < 3; ++step) {
    const auto g = random_vec(n, static_cast<std::uint32_t>(200 + step));
    be->sgd_update(p.data(), g.data(), buf.data(), n, cfg, 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      const float gi = g[i] + cfg.weight_decay * pr[i];
      br[i] = cfg.momentum * br[i] + gi;
      pr[i] -= cfg.lr * br[i];
    }
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, static_cast<double>(std::abs(p[i] - pr[i])));
  EXPECT_LT(worst, 1e-6);
}

}  // namespace
}  // namespace tt
