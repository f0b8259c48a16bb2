// Shared helpers for the CPU backend tests: seeded random buffers and a central-difference gradient
// checker. The CPU backend works on host memory, so tests pass std::vector storage directly.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace tt::test {

inline std::vector<float> random_vec(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<int32_t> random_tokens(std::size_t n, int vocab, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// sum_i out[i] * w[i] in double: the scalar loss whose gradient w.r.t. out is w.
inline double weighted_sum(const std::vector<float>& out, const std::vector<float>& w) {
  double s = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * w[i];
  return s;
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct GradCheck {
  double worst = 0.0;  // max over checked elements of |analytic - numeric| / (atol + rtol * |numeric|)
  std::size_t at = 0;  // element where the worst ratio occurred
  double analytic = 0.0;
  double numeric = 0.0;
  std::size_t checked = 0;
};

// Central differences of loss() w.r.t. x, compared with analytic (same size as x). loss() must read x.
// Checks every element, or an evenly strided sample of max_checks elements for large x. Passing means
// worst <= 1. The step actually taken is (float)(x+eps) - (float)(x-eps), not 2*eps.
template <typename Loss>
GradCheck check_grad(std::vector<float>& x, const std::vector<float>& analytic, Loss loss, float eps = 1e-2f,
                     double atol = 2e-3, double rtol = 1e-2, std::size_t max_checks = 400) {
  GradCheck r;
  const std::size_t n = x.size();
  const std::size_t stride = n <= max_checks ? 1 : (n + max_checks - 1) / max_checks;
  for (std::size_t i = 0; i < n; i += stride) {
    const float orig = x[i];
    const float xp = orig + eps;
    const float xm = orig - eps;
    x[i] = xp;
    const double lp = loss();
    x[i] = xm;
    const double lm = loss();
    x[i] = orig;
    const double numeric = (lp - lm) / (static_cast<double>(xp) - static_cast<double>(xm));
    const double ratio = std::abs(analytic[i] - numeric) / (atol + rtol * std::abs(numeric));
    ++r.checked;
    if (ratio > r.worst) {
      r.worst = ratio;
      r.at = i;
      r.analytic = analytic[i];
      r.numeric = numeric;
    }
  }
  return r;
}

// Analytic gradient from an accumulating backward: after - before.
inline std::vector<float> delta(const std::vector<float>& after, const std::vector<float>& before) {
  std::vector<float> d(after.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = after[i] - before[i];
  return d;
}

}  // namespace tt::test
