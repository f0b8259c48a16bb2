// CPU backend forward ops against straightforward double-precision references, plus memory and
// elementwise ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/error.h"
#include "core/cpu/cpu_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::random_tokens;
using test::random_vec;

constexpr double kPi = 3.14159265358979323846;

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) > atol + rtol * std::abs(want[i])) {
      if (bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

TEST(CpuBackend, DescribeNamesOpenBlasAndThreads) {
  auto be = make_cpu_backend(2);
  EXPECT_EQ(be->kind(), DeviceKind::Cpu);
  const std::string d = be->describe();
  EXPECT_NE(d.find("OpenBLAS"), std::string::npos) << d;
  EXPECT_NE(d.find("2 threads"), std::string::npos) << d;
  EXPECT_THROW(make_cpu_backend(0), InputError);
}

TEST(CpuBackend, AllocateIsAlignedAndZeroed) {
  auto be = make_cpu_backend(1);
  for (std::size_t bytes : {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{1} << 20}) {
    void* p = be->allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << bytes;
    const auto* c = static_cast<const unsigned char*>(p);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < bytes; ++i) nonzero += c[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes;
    be->deallocate(p);
  }
  be->deallocate(nullptr);  // like free(nullptr)
}

TEST(CpuBackend, CopiesAndElementwise) {
  auto be = make_cpu_backend(2);
  for (std::size_t n : {std::size_t{7}, std::size_t{100003}}) {  // below and above the parallel threshold
    auto a = random_vec(n, 1);
    auto b = random_vec(n, 2);
    std::vector<float> x(n), y(n);
    be->copy_to_device(x.data(), a.data(), n * sizeof(float));
    be->copy(y.data(), x.data(), n * sizeof(float));
    std::vector<float> h(n);
    be->copy_to_host(h.data(), y.data(), n * sizeof(float));
    EXPECT_TRUE(test::bit_equal(h, a));

    std::vector<float> out(n);
    be->add(out.data(), a.data(), b.data(), n);
    std::vector<float> acc = a;
    be->accumulate(acc.data(), b.data(), n);
    std::vector<float> sc = a;
    be->scale(sc.data(), -0.5f, n);
    std::vector<float> f(n, 1.0f);
    be->fill(f.data(), 3.25f, n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      bad += out[i] != a[i] + b[i];
      bad += acc[i] != a[i] + b[i];
      bad += sc[i] != a[i] * -0.5f;
      bad += f[i] != 3.25f;
    }
    EXPECT_EQ(bad, 0u) << n;
    // In place: out aliases an input (residual add).
    std::vector<float> inplace = a;
    be->add(inplace.data(), inplace.data(), b.data(), n);
    EXPECT_TRUE(test::bit_equal(inplace, acc));
  }
}

TEST(CpuBackend, SumSquaresAndMean) {
  auto be = make_cpu_backend(2);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{1'000'003}}) {
    auto x = random_vec(n, 3, -2.0f, 3.0f);
    double ss = 0.0, s = 0.0;
    for (float v : x) {
      ss += static_cast<double>(v) * v;
      s += v;
    }
    EXPECT_NEAR(be->sum_squares(x.data(), n), ss, 1e-12 * std::max(1.0, ss)) << n;
    const double want_mean = n ? s / static_cast<double>(n) : 0.0;
    EXPECT_NEAR(be->mean(x.data(), n), want_mean, 1e-12 * std::max(1.0, std::abs(s))) << n;
  }
}

TEST(CpuBackend, EncoderForward) {
  auto be = make_cpu_backend(2);
  const int B = 3, T = 5, C = 7, V = 11, maxT = 8;
  auto tokens = random_tokens(static_cast<std::size_t>(B) * T, V, 4);
  auto wte = random_vec(static_cast<std::size_t>(V) * C, 5);
  auto wpe = random_vec(static_cast<std::size_t>(maxT) * C, 6);
  std::vector<float> out(static_cast<std::size_t>(B) * T * C);
  be->encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  std::vector<double> want(out.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        want[(b * T + t) * C + c] = static_cast<double>(wte[tokens[b * T + t] * C + c]) + wpe[t * C + c];
  expect_close(out, want, 1e-6, 0, "encoder out");
}

std::vector<double> ref_layernorm(const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& b, int N, int C, std::vector<double>* mean,
                                  std::vector<double>* rstd) {
  std::vector<double> out(x.size());
  for (int n = 0; n < N; ++n) {
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    m /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (x[n * C + c] - m) * (x[n * C + c] - m);
    var /= C;
    const double rs = 1.0 / std::sqrt(var + 1e-5);
    for (int c = 0; c < C; ++c) out[n * C + c] = (x[n * C + c] - m) * rs * w[c] + (b.empty() ? 0.0 : b[c]);
    (*mean)[n] = m;
    (*rstd)[n] = rs;
  }
  return out;
}

TEST(CpuBackend, LayernormForward) {
  auto be = make_cpu_backend(2);
  for (auto [N, C] : {std::pair{6, 10}, std::pair{67, 130}}) {
    auto x = random_vec(static_cast<std::size_t>(N) * C, 7, -1.0f, 3.0f);  // non-zero mean on purpose
    auto w = random_vec(C, 8, 0.5f, 1.5f);
    auto b = random_vec(C, 9);
    std::vector<float> out(x.size()), mean(N), rstd(N);
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    std::vector<double> wm(N), wr(N);
    auto want = ref_layernorm(x, w, b, N, C, &wm, &wr);
    expect_close(out, want, 1e-5, 1e-5, "layernorm out");
    expect_close(mean, wm, 1e-6, 1e-6, "layernorm mean");
    expect_close(rstd, wr, 1e-6, 1e-6, "layernorm rstd");
    // No bias; no saved statistics.
    be->layernorm_forward(out.data(), nullptr, nullptr, x.data(), w.data(), nullptr, N, C);
    want = ref_layernorm(x, w, {}, N, C, &wm, &wr);
    expect_close(out, want, 1e-5, 1e-5, "layernorm out (no bias)");
  }
}

std::vector<double> ref_matmul(const std::vector<float>& inp, const std::vector<float>& w, const float* bias,
                               int N, int IC, int OC) {
  std::vector<double> out(static_cast<std::size_t>(N) * OC);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) {
      double s = bias ? bias[o] : 0.0;
      for (int i = 0; i < IC; ++i) s += static_cast<double>(inp[n * IC + i]) * w[o * IC + i];
      out[n * OC + o] = s;
    }
  return out;
}

TEST(CpuBackend, MatmulForward) {
  auto be = make_cpu_backend(2);
  for (auto [N, IC, OC] : {std::tuple{5, 7, 3}, std::tuple{64, 96, 130}}) {
    auto inp = random_vec(static_cast<std::size_t>(N) * IC, 10);
    auto w = random_vec(static_cast<std::size_t>(OC) * IC, 11);
    auto bias = random_vec(OC, 12);
    std::vector<float> out(static_cast<std::size_t>(N) * OC, std::numeric_limits<float>::quiet_NaN());
    be->matmul_forward(out.data(), inp.data(), w.data(), bias.data(), N, IC, OC);
    expect_close(out, ref_matmul(inp, w, bias.data(), N, IC, OC), 1e-5, 1e-5, "matmul out");
    // Without bias the output must be overwritten, not accumulated (NaN on entry would leak through).
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    be->matmul_forward(out.data(), inp.data(), w.data(), nullptr, N, IC, OC);
    expect_close(out, ref_matmul(inp, w, nullptr, N, IC, OC), 1e-5, 1e-5, "matmul out (no bias)");
  }
}

// Naive attention: out (B,T,C), att (B,NH,T,T); query i reads keys [0, i] (causal) or all of them.
void ref_attention(const std::vector<float>& qkv, int B, int T, int C, int NH, AttentionMask mask,
                   std::vector<double>& out, std::vector<double>& att) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  out.assign(static_cast<std::size_t>(B) * T * C, 0.0);
  att.assign(static_cast<std::size_t>(B) * NH * T * T, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < T; ++i) {
        const int kn = mask == AttentionMask::Causal ? i + 1 : T;
        std::vector<double> s(static_cast<std::size_t>(kn));
        double mx = -1e300;
        for (int j = 0; j < kn; ++j) {
          double d = 0;
          for (int e = 0; e < hs; ++e)
            d += static_cast<double>(qkv[(b * T + i) * 3 * C + h * hs + e]) *
                 qkv[(b * T + j) * 3 * C + C + h * hs + e];
          s[j] = d * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < kn; ++j) sum += s[j] = std::exp(s[j] - mx);
        for (int j = 0; j < kn; ++j) {
          const double p = s[j] / sum;
          att[((static_cast<std::size_t>(b) * NH + h) * T + i) * T + j] = p;
          for (int e = 0; e < hs; ++e)
            out[(b * T + i) * C + h * hs + e] += p * qkv[(b * T + j) * 3 * C + 2 * C + h * hs + e];
        }
      }
}

TEST(CpuBackend, AttentionForward) {
  auto be = make_cpu_backend(2);
  // T = 150 spans two of the backend's row blocks (128 rows each).
  for (const AttentionMask mask : {AttentionMask::Causal, AttentionMask::Bidirectional}) {
    for (auto [B, T, C, NH] : {std::tuple{2, 5, 8, 2}, std::tuple{1, 150, 16, 2}}) {
      auto qkv = random_vec(static_cast<std::size_t>(B) * T * 3 * C, 13, -2.0f, 2.0f);
      std::vector<float> out(static_cast<std::size_t>(B) * T * C);
      std::vector<float> att(static_cast<std::size_t>(B) * NH * T * T,
                             std::numeric_limits<float>::quiet_NaN());
      be->attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, mask);
      std::vector<double> want_out, want_att;
      ref_attention(qkv, B, T, C, NH, mask, want_out, want_att);
      const std::string what = mask == AttentionMask::Causal ? "causal" : "bidirectional";
      expect_close(out, want_out, 1e-5, 1e-4, ("attention out " + what).c_str());
      // Includes the exact zeros above the diagonal (causal) and their absence (bidirectional).
      expect_close(att, want_att, 1e-6, 1e-4, ("attention att " + what).c_str());
    }
  }
}

TEST(CpuBackend, GeluForward) {
  auto be = make_cpu_backend(2);
  for (std::size_t n : {std::size_t{33}, std::size_t{70001}}) {
    auto x = random_vec(n, 14, -6.0f, 6.0f);
    std::vector<float> out(n);
    be->gelu_forward(out.data(), x.data(), n);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      want[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v)));
    }
    expect_close(out, want, 1e-6, 1e-5, "gelu out");
  }
}

TEST(CpuBackend, SoftmaxXentForward) {
  auto be = make_cpu_backend(2);
  const int N = 9, V = 37, Vp = 40;
  auto logits = random_vec(static_cast<std::size_t>(N) * Vp, 15, -5.0f, 5.0f);
  logits[3 * Vp + 2] = 80.0f;  // a dominant logit: exp would overflow without the max shift
  auto targets = random_tokens(N, V, 16);
  targets[3] = 5;  // and a target whose probability underflows in float
  std::vector<float> losses(N), probs(static_cast<std::size_t>(N) * Vp, -1.0f);
  be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
  std::vector<double> wl(N), wp(probs.size(), 0.0);
  for (int n = 0; n < N; ++n) {
    double mx = -1e300;
    for (int i = 0; i < V; ++i) mx = std::max(mx, static_cast<double>(logits[n * Vp + i]));
    double s = 0;
    for (int i = 0; i < V; ++i) s += std::exp(logits[n * Vp + i] - mx);
    for (int i = 0; i < V; ++i) wp[n * Vp + i] = std::exp(logits[n * Vp + i] - mx) / s;
    wl[n] = std::log(s) - (logits[n * Vp + targets[n]] - mx);
  }
  expect_close(losses, wl, 1e-5, 1e-5, "xent losses");
  expect_close(probs, wp, 1e-7, 1e-5, "xent probs");  // padded columns are 0
  EXPECT_GT(losses[3], 70.0f);                        // finite and large, not inf

  // An ignored target costs nothing; every other row keeps its loss.
  targets[1] = kIgnoreTarget;
  be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
  EXPECT_EQ(losses[1], 0.0f);
  EXPECT_NEAR(losses[2], wl[2], 1e-5 * std::abs(wl[2]) + 1e-5);

  targets[0] = V;
  EXPECT_THROW(be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp),
               InputError);
  targets[0] = -2;  // only kIgnoreTarget is a valid negative target
  EXPECT_THROW(be->softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp),
               InputError);
}

TEST(CpuBackend, AddBias) {
  auto be = make_cpu_backend(2);
  const int N = 7, C = 5;
  auto x = random_vec(static_cast<std::size_t>(N) * C, 17);
  const auto bias = random_vec(C, 18);
  std::vector<double> want(x.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) want[static_cast<std::size_t>(n) * C + c] = double{x[n * C + c]} + bias[c];
  be->add_bias(x.data(), bias.data(), N, C);
  expect_close(x, want, 0, 1e-7, "add_bias");
}

}  // namespace
}  // namespace tt
