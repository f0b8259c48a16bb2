// The CUDA backend against the CPU backend (the reference): every op on the same random inputs
// (fixed seeds, values in [-1, 1]), compared by relative error ||gpu - cpu|| / ||cpu||. Backward ops
// start from random gradient buffers to check that they accumulate (+=); forward outputs start as
// NaN so that an element the GPU never writes fails the test. Also: determinism (bit-identical
// repeats of every op with a reduction), TF32 matmuls within TF32 tolerance, copies from a second
// thread. The Llama ops (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention) are compared the
// same way, the CPU ops being the ones test_cpu_backend_llama_ops.cpp checks by finite differences. Shapes
// are deliberately odd (N not a multiple of 32, C = 48, T = 13, NH = 3, V = 50 in
// Vp = 64, stride-2 and 7x7 convolutions, 3x3/s2/p1 max pooling).
//
// Without a visible GPU every test that needs one reports itself SKIPPED (and CTest shows the
// entry as skipped, never passed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/cuda/device.h"
#include "base/error.h"
#include "core/backend.h"
#include "core/buffer.h"
#include "core/cpu/cpu_backend.h"
#include "core/cuda/cuda_backend.h"
#include "tests/core/cpu_test_util.h"

namespace tt {
namespace {

using test::bit_equal;
using test::random_tokens;
using test::random_vec;

constexpr double kTolElementwise = 1e-5;  // FP32 elementwise ops and row/column reductions
constexpr double kTolGemm = 1e-4;         // FP32 matmul, attention, convolution
constexpr double kTolTf32 = 5e-3;         // TF32 tensor-core matmul

std::size_t sz(long long n) {
  return static_cast<std::size_t>(n);
}

std::vector<float> nan_vec(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// ||a - ref|| / ||ref|| in double (||a - ref|| when ref is all zero); NaN anywhere gives NaN.
double rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  if (a.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0.0;
  double den = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::size_t count_nonfinite(const std::vector<float>& v) {
  std::size_t bad = 0;
  for (float x : v) bad += std::isfinite(x) ? 0 : 1;
  return bad;
}

// One host vector mirrored into a CPU-backend buffer and a CUDA-backend buffer.
template <typename T>
class Mirror {
 public:
  Mirror(Backend& cpu, Backend& gpu, const std::vector<T>& host)
      : cpu_(&cpu), gpu_(&gpu), n_(host.size()), cbuf_(cpu, bytes()), gbuf_(gpu, bytes()) {
    set(host);
  }
  void set(const std::vector<T>& host) {
    cpu_->copy_to_device(cbuf_.data(), host.data(), bytes());
    gpu_->copy_to_device(gbuf_.data(), host.data(), bytes());
  }
  T* c() const { return cbuf_.as<T>(); }
  T* g() const { return gbuf_.as<T>(); }
  std::vector<T> on_cpu() const {
    std::vector<T> v(n_);
    cpu_->copy_to_host(v.data(), cbuf_.data(), bytes());
    return v;
  }
  std::vector<T> on_gpu() const {
    std::vector<T> v(n_);
    gpu_->copy_to_host(v.data(), gbuf_.data(), bytes());
    return v;
  }

 private:
  std::size_t bytes() const { return n_ * sizeof(T); }
  Backend* cpu_;
  Backend* gpu_;
  std::size_t n_;
  DeviceBuffer cbuf_;
  DeviceBuffer gbuf_;
};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count_or_zero() == 0)
      GTEST_SKIP() << "no CUDA GPU visible: the CUDA backend tests need one";
    cpu_ = make_cpu_backend(2);
    gpu_ = make_cuda_backend(0, false);
  }

  Mirror<float> rand(std::size_t n, std::uint32_t seed) {
    return Mirror<float>(*cpu_, *gpu_, random_vec(n, seed));
  }
  Mirror<float> poisoned(std::size_t n) { return Mirror<float>(*cpu_, *gpu_, nan_vec(n)); }
  Mirror<int32_t> tokens(std::size_t n, int vocab, std::uint32_t seed) {
    return Mirror<int32_t>(*cpu_, *gpu_, random_tokens(n, vocab, seed));
  }
  Mirror<float> from(const std::vector<float>& v) { return Mirror<float>(*cpu_, *gpu_, v); }

  // GPU result close to the CPU result, and every GPU element finite (inputs here never overflow).
  static void expect_close(const Mirror<float>& m, double tol, const std::string& what) {
    const std::vector<float> g = m.on_gpu();
    const std::vector<float> c = m.on_cpu();
    const std::size_t bad = count_nonfinite(g);
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " GPU elements are NaN/inf (never written?)";
    const double e = rel_err(g, c);
    EXPECT_LT(e, tol) << what << ": relative error " << e;
  }

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Backend> gpu_;
};

// ---- factory (no GPU needed) ----------------------------------------------------------------------

TEST(CudaBackendFactory, InvalidOrdinalIsInputError) {
  const int n = cuda::device_count_or_zero();  // must not throw, with or without a driver
  EXPECT_GE(n, 0);
  EXPECT_THROW(make_cuda_backend(n, false), InputError);
  EXPECT_THROW(make_cuda_backend(-1, false), InputError);
}

// ---- memory ---------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, DescribeKindAndMemory) {
  EXPECT_EQ(gpu_->kind(), DeviceKind::Cuda);
  const std::string d = gpu_->describe();
  EXPECT_EQ(d.rfind("cuda: ", 0), 0u) << d;
  EXPECT_NE(d.find("cuBLAS"), std::string::npos) << d;
  EXPECT_NE(d.find("FP32"), std::string::npos) << d;

  const std::size_t n = 100003;
  DeviceBuffer a(*gpu_, n * sizeof(float));
  std::vector<float> host(n, 1.0f);
  gpu_->copy_to_host(host.data(), a.data(), n * sizeof(float));
  EXPECT_EQ(count_nonfinite(host), 0u);
  for (float x : host) ASSERT_EQ(x, 0.0f) << "allocate must zero-fill";

  const std::vector<float> src = random_vec(n, 1);
  gpu_->copy_to_device(a.data(), src.data(), n * sizeof(float));
  DeviceBuffer b(*gpu_, n * sizeof(float));
  gpu_->copy(b.data(), a.data(), n * sizeof(float));
  gpu_->copy_to_host(host.data(), b.data(), n * sizeof(float));
  EXPECT_TRUE(bit_equal(host, src));

  // Overlapping device copy has memmove semantics: shift by 7 elements.
  gpu_->copy(a.as<float>() + 7, a.as<float>(), (n - 7) * sizeof(float));
  gpu_->copy_to_host(host.data(), a.data(), n * sizeof(float));
  std::vector<float> want = src;
  for (std::size_t i = 7; i < n; ++i) want[i] = src[i - 7];
  EXPECT_TRUE(bit_equal(host, want));

  gpu_->fill(a.as<float>(), 2.5f, n);
  gpu_->synchronize();
  gpu_->copy_to_host(host.data(), a.data(), n * sizeof(float));
  for (float x : host) ASSERT_EQ(x, 2.5f);

  void* zero = gpu_->allocate(0);  // zero-size requests are legal and give a freeable pointer
  EXPECT_NE(zero, nullptr);
  gpu_->deallocate(zero);
  gpu_->deallocate(nullptr);
  gpu_->copy_to_device(a.data(), src.data(), 0);
  gpu_->fill(a.as<float>(), 1.0f, 0);
}

// ---- elementwise and reductions -----------------------------------------------------------------

TEST_F(CudaBackendTest, Elementwise) {
  const std::size_t n = 100003;
  auto a = rand(n, 1);
  auto b = rand(n, 2);
  auto out = poisoned(n);
  cpu_->add(out.c(), a.c(), b.c(), n);
  gpu_->add(out.g(), a.g(), b.g(), n);
  expect_close(out, kTolElementwise, "add");
  cpu_->add(a.c(), a.c(), b.c(), n);  // in place, as a residual stream
  gpu_->add(a.g(), a.g(), b.g(), n);
  expect_close(a, kTolElementwise, "add in place");
  cpu_->accumulate(b.c(), out.c(), n);
  gpu_->accumulate(b.g(), out.g(), n);
  expect_close(b, kTolElementwise, "accumulate");
  cpu_->scale(b.c(), -0.37f, n);
  gpu_->scale(b.g(), -0.37f, n);
  expect_close(b, kTolElementwise, "scale");

  auto x = rand(n, 3);
  auto dout = rand(n, 4);
  auto y = poisoned(n);
  cpu_->gelu_forward(y.c(), x.c(), n);
  gpu_->gelu_forward(y.g(), x.g(), n);
  expect_close(y, kTolElementwise, "gelu_forward");
  auto dx = rand(n, 5);
  cpu_->gelu_backward(dx.c(), x.c(), dout.c(), n);
  gpu_->gelu_backward(dx.g(), x.g(), dout.g(), n);
  expect_close(dx, kTolElementwise, "gelu_backward");

  auto r = poisoned(n);
  cpu_->relu_forward(r.c(), x.c(), n);
  gpu_->relu_forward(r.g(), x.g(), n);
  expect_close(r, kTolElementwise, "relu_forward");
  auto dr = rand(n, 6);
  cpu_->relu_backward(dr.c(), r.c(), dout.c(), n);
  gpu_->relu_backward(dr.g(), r.g(), dout.g(), n);
  expect_close(dr, kTolElementwise, "relu_backward");
  cpu_->relu_forward(x.c(), x.c(), n);  // in place
  gpu_->relu_forward(x.g(), x.g(), n);
  expect_close(x, kTolElementwise, "relu_forward in place");
}

TEST_F(CudaBackendTest, SumSquaresAndMeanAreDeterministic) {
  for (std::size_t n : {sz(1), sz(31), sz(1000), sz(100003), sz((1 << 21) + 3)}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    auto x = rand(n, 7);
    const double c_ss = cpu_->sum_squares(x.c(), n);
    const double g_ss = gpu_->sum_squares(x.g(), n);
    EXPECT_NEAR(g_ss, c_ss, 1e-10 * c_ss);
    const double c_mean = cpu_->mean(x.c(), n);
    const double g_mean = gpu_->mean(x.g(), n);
    EXPECT_NEAR(g_mean, c_mean, 1e-10);
    EXPECT_EQ(gpu_->sum_squares(x.g(), n), g_ss) << "not bit-identical on repeat";
    EXPECT_EQ(gpu_->mean(x.g(), n), g_mean) << "not bit-identical on repeat";
  }
  EXPECT_EQ(gpu_->sum_squares(nullptr, 0), 0.0);
  EXPECT_EQ(gpu_->mean(nullptr, 0), 0.0);
}

// ---- transformer ops ------------------------------------------------------------------------------

TEST_F(CudaBackendTest, Encoder) {
  struct Shape {
    int B, T, C, V, maxT;
  };
  // V = 5 makes every token repeat many times (the dwte rows shared by many positions).
  for (const Shape s : {Shape{3, 13, 48, 50, 16}, Shape{4, 64, 40, 5, 64}, Shape{2, 33, 768, 300, 40}}) {
    SCOPED_TRACE("B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " C=" + std::to_string(s.C));
    const std::size_t N = sz(s.B) * s.T;
    auto tok = tokens(N, s.V, 11);
    auto wte = rand(sz(s.V) * s.C, 12);
    auto wpe = rand(sz(s.maxT) * s.C, 13);
    auto out = poisoned(N * s.C);
    cpu_->encoder_forward(out.c(), tok.c(), wte.c(), wpe.c(), s.B, s.T, s.C);
    gpu_->encoder_forward(out.g(), tok.g(), wte.g(), wpe.g(), s.B, s.T, s.C);
    expect_close(out, kTolElementwise, "encoder_forward");

    auto dout = rand(N * s.C, 14);
    auto dwte = rand(sz(s.V) * s.C, 15);
    auto dwpe = rand(sz(s.maxT) * s.C, 16);
    cpu_->encoder_backward(dwte.c(), dwpe.c(), dout.c(), tok.c(), s.B, s.T, s.C);
    gpu_->encoder_backward(dwte.g(), dwpe.g(), dout.g(), tok.g(), s.B, s.T, s.C);
    expect_close(dwte, kTolElementwise, "encoder_backward dwte");
    expect_close(dwpe, kTolElementwise, "encoder_backward dwpe");
    // Each gradient alone (the other absent).
    cpu_->encoder_backward(nullptr, dwpe.c(), dout.c(), tok.c(), s.B, s.T, s.C);
    gpu_->encoder_backward(nullptr, dwpe.g(), dout.g(), tok.g(), s.B, s.T, s.C);
    cpu_->encoder_backward(dwte.c(), nullptr, dout.c(), tok.c(), s.B, s.T, s.C);
    gpu_->encoder_backward(dwte.g(), nullptr, dout.g(), tok.g(), s.B, s.T, s.C);
    expect_close(dwte, kTolElementwise, "encoder_backward dwte alone");
    expect_close(dwpe, kTolElementwise, "encoder_backward dwpe alone");
  }
}

TEST_F(CudaBackendTest, LayerNorm) {
  for (const auto& [N, C] : {std::pair{37, 48}, std::pair{65, 768}, std::pair{300, 33}}) {
    for (const bool with_bias : {true, false}) {
      SCOPED_TRACE("N=" + std::to_string(N) + " C=" + std::to_string(C) +
                   " bias=" + std::to_string(with_bias));
      auto inp = rand(sz(N) * C, 21);
      auto w = rand(sz(C), 22);
      auto bias = rand(sz(C), 23);
      auto out = poisoned(sz(N) * C);
      auto mean = poisoned(sz(N));
      auto rstd = poisoned(sz(N));
      cpu_->layernorm_forward(out.c(), mean.c(), rstd.c(), inp.c(), w.c(), with_bias ? bias.c() : nullptr, N,
                              C);
      gpu_->layernorm_forward(out.g(), mean.g(), rstd.g(), inp.g(), w.g(), with_bias ? bias.g() : nullptr, N,
                              C);
      expect_close(out, kTolElementwise, "layernorm_forward out");
      expect_close(mean, kTolElementwise, "layernorm_forward mean");
      expect_close(rstd, kTolElementwise, "layernorm_forward rstd");

      auto dout = rand(sz(N) * C, 24);
      auto dinp = rand(sz(N) * C, 25);
      auto dw = rand(sz(C), 26);
      auto db = rand(sz(C), 27);
      cpu_->layernorm_backward(dinp.c(), dw.c(), with_bias ? db.c() : nullptr, dout.c(), inp.c(), w.c(),
                               mean.c(), rstd.c(), N, C);
      gpu_->layernorm_backward(dinp.g(), dw.g(), with_bias ? db.g() : nullptr, dout.g(), inp.g(), w.g(),
                               mean.g(), rstd.g(), N, C);
      expect_close(dinp, kTolElementwise, "layernorm_backward dinp");
      expect_close(dw, kTolElementwise, "layernorm_backward dweight");
      expect_close(db, kTolElementwise, "layernorm_backward dbias");
      // dinp absent: parameter gradients only.
      cpu_->layernorm_backward(nullptr, dw.c(), db.c(), dout.c(), inp.c(), w.c(), mean.c(), rstd.c(), N, C);
      gpu_->layernorm_backward(nullptr, dw.g(), db.g(), dout.g(), inp.g(), w.g(), mean.g(), rstd.g(), N, C);
      expect_close(dw, kTolElementwise, "layernorm_backward dweight (no dinp)");
      expect_close(db, kTolElementwise, "layernorm_backward dbias (no dinp)");
    }
  }
}

struct MatmulShape {
  int N, IC, OC;
};
const MatmulShape kMatmulShapes[] = {
    {37, 48, 144}, {100, 67, 33}, {1, 5, 7}, {256, 768, 2304}, {200, 3072, 768}};

TEST_F(CudaBackendTest, Matmul) {
  for (const MatmulShape& s : kMatmulShapes) {
    for (const bool with_bias : {true, false}) {
      SCOPED_TRACE("N=" + std::to_string(s.N) + " IC=" + std::to_string(s.IC) +
                   " OC=" + std::to_string(s.OC) + " bias=" + std::to_string(with_bias));
      auto inp = rand(sz(s.N) * s.IC, 31);
      auto w = rand(sz(s.OC) * s.IC, 32);
      auto bias = rand(sz(s.OC), 33);
      auto out = poisoned(sz(s.N) * s.OC);
      cpu_->matmul_forward(out.c(), inp.c(), w.c(), with_bias ? bias.c() : nullptr, s.N, s.IC, s.OC);
      gpu_->matmul_forward(out.g(), inp.g(), w.g(), with_bias ? bias.g() : nullptr, s.N, s.IC, s.OC);
      expect_close(out, kTolGemm, "matmul_forward");

      auto dout = rand(sz(s.N) * s.OC, 34);
      auto dinp = rand(sz(s.N) * s.IC, 35);
      auto dw = rand(sz(s.OC) * s.IC, 36);
      auto db = rand(sz(s.OC), 37);
      cpu_->matmul_backward(dinp.c(), dw.c(), with_bias ? db.c() : nullptr, dout.c(), inp.c(), w.c(), s.N,
                            s.IC, s.OC);
      gpu_->matmul_backward(dinp.g(), dw.g(), with_bias ? db.g() : nullptr, dout.g(), inp.g(), w.g(), s.N,
                            s.IC, s.OC);
      expect_close(dinp, kTolGemm, "matmul_backward dinp");
      expect_close(dw, kTolGemm, "matmul_backward dweight");
      expect_close(db, kTolElementwise, "matmul_backward dbias");
      // Only some gradients wanted.
      cpu_->matmul_backward(nullptr, dw.c(), nullptr, dout.c(), inp.c(), w.c(), s.N, s.IC, s.OC);
      gpu_->matmul_backward(nullptr, dw.g(), nullptr, dout.g(), inp.g(), w.g(), s.N, s.IC, s.OC);
      cpu_->matmul_backward(dinp.c(), nullptr, db.c(), dout.c(), inp.c(), w.c(), s.N, s.IC, s.OC);
      gpu_->matmul_backward(dinp.g(), nullptr, db.g(), dout.g(), inp.g(), w.g(), s.N, s.IC, s.OC);
      expect_close(dinp, kTolGemm, "matmul_backward dinp (partial)");
      expect_close(dw, kTolGemm, "matmul_backward dweight (partial)");
      expect_close(db, kTolElementwise, "matmul_backward dbias (partial)");
    }
  }
}

TEST_F(CudaBackendTest, AddBiasAndItsGradient) {
  const int N = 37, C = 48;
  auto x = rand(sz(N) * C, 38);
  auto bias = rand(sz(C), 39);
  cpu_->add_bias(x.c(), bias.c(), N, C);
  gpu_->add_bias(x.g(), bias.g(), N, C);
  expect_close(x, kTolElementwise, "add_bias");
  // Its gradient is matmul_backward's dbias alone (no dinp, no dweight).
  auto db = rand(sz(C), 40);
  cpu_->matmul_backward(nullptr, nullptr, db.c(), x.c(), nullptr, nullptr, N, C, C);
  gpu_->matmul_backward(nullptr, nullptr, db.g(), x.g(), nullptr, nullptr, N, C, C);
  expect_close(db, kTolElementwise, "add_bias gradient");
}

TEST_F(CudaBackendTest, MatmulTf32) {
  auto tf32 = make_cuda_backend(0, true);
  EXPECT_NE(tf32->describe().find("TF32"), std::string::npos) << tf32->describe();
  for (const MatmulShape& s : kMatmulShapes) {
    SCOPED_TRACE("N=" + std::to_string(s.N) + " IC=" + std::to_string(s.IC) + " OC=" + std::to_string(s.OC));
    Mirror<float> inp(*cpu_, *tf32, random_vec(sz(s.N) * s.IC, 41));
    Mirror<float> w(*cpu_, *tf32, random_vec(sz(s.OC) * s.IC, 42));
    Mirror<float> bias(*cpu_, *tf32, random_vec(sz(s.OC), 43));
    Mirror<float> out(*cpu_, *tf32, nan_vec(sz(s.N) * s.OC));
    cpu_->matmul_forward(out.c(), inp.c(), w.c(), bias.c(), s.N, s.IC, s.OC);
    tf32->matmul_forward(out.g(), inp.g(), w.g(), bias.g(), s.N, s.IC, s.OC);
    expect_close(out, kTolTf32, "tf32 matmul_forward");
    Mirror<float> dout(*cpu_, *tf32, random_vec(sz(s.N) * s.OC, 44));
    Mirror<float> dinp(*cpu_, *tf32, random_vec(sz(s.N) * s.IC, 45));
    Mirror<float> dw(*cpu_, *tf32, random_vec(sz(s.OC) * s.IC, 46));
    Mirror<float> db(*cpu_, *tf32, random_vec(sz(s.OC), 47));
    cpu_->matmul_backward(dinp.c(), dw.c(), db.c(), dout.c(), inp.c(), w.c(), s.N, s.IC, s.OC);
    tf32->matmul_backward(dinp.g(), dw.g(), db.g(), dout.g(), inp.g(), w.g(), s.N, s.IC, s.OC);
    expect_close(dinp, kTolTf32, "tf32 matmul_backward dinp");
    expect_close(dw, kTolTf32, "tf32 matmul_backward dweight");
    expect_close(db, kTolTf32, "tf32 matmul_backward dbias");
  }
}

struct AttnShape {
  int B, T, C, NH;
  AttentionMask mask;
};
const AttnShape kAttnShapes[] = {
    {2, 13, 48, 3, AttentionMask::Causal},        {1, 64, 96, 4, AttentionMask::Causal},
    {2, 100, 64, 2, AttentionMask::Causal},       {1, 1, 48, 3, AttentionMask::Causal},
    {2, 13, 48, 3, AttentionMask::Bidirectional}, {2, 100, 64, 2, AttentionMask::Bidirectional}};

TEST_F(CudaBackendTest, Attention) {
  for (const AttnShape& s : kAttnShapes) {
    const bool causal = s.mask == AttentionMask::Causal;
    SCOPED_TRACE("B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " C=" + std::to_string(s.C) +
                 " NH=" + std::to_string(s.NH) + (causal ? " causal" : " bidirectional"));
    const std::size_t N = sz(s.B) * s.T;
    const std::size_t TT = sz(s.B) * s.NH * s.T * s.T;
    auto qkv = rand(N * 3 * s.C, 51);
    auto out = poisoned(N * s.C);
    auto att = poisoned(TT);
    cpu_->attention_forward(out.c(), att.c(), qkv.c(), s.B, s.T, s.C, s.NH, s.mask);
    gpu_->attention_forward(out.g(), att.g(), qkv.g(), s.B, s.T, s.C, s.NH, s.mask);
    expect_close(out, kTolGemm, "attention_forward out");
    expect_close(att, kTolGemm, "attention_forward att");
    const std::vector<float> a = att.on_gpu();
    std::size_t nonzero_above = 0;
    for (std::size_t r = 0; r < sz(s.B) * s.NH * s.T; ++r) {
      const std::size_t i = r % sz(s.T);
      for (std::size_t j = i + 1; j < sz(s.T); ++j) nonzero_above += a[r * s.T + j] != 0.0f ? 1 : 0;
    }
    if (causal) {
      EXPECT_EQ(nonzero_above, 0u) << "att entries above the diagonal must be exactly zero";
    } else if (s.T > 1) {
      EXPECT_GT(nonzero_above, 0u) << "bidirectional attention must see later keys";
    }

    auto dout = rand(N * s.C, 52);
    auto dqkv = rand(N * 3 * s.C, 53);
    auto scratch = poisoned(TT);  // contents on entry are ignored, NaN included
    cpu_->attention_backward(dqkv.c(), scratch.c(), dout.c(), qkv.c(), att.c(), s.B, s.T, s.C, s.NH, s.mask);
    gpu_->attention_backward(dqkv.g(), scratch.g(), dout.g(), qkv.g(), att.g(), s.B, s.T, s.C, s.NH, s.mask);
    expect_close(dqkv, kTolGemm, "attention_backward dqkv");
  }
}

// ---- Llama ops --------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, RmsNorm) {
  for (const auto& [N, C] : {std::pair{37, 48}, std::pair{65, 576}, std::pair{300, 33}}) {
    SCOPED_TRACE("N=" + std::to_string(N) + " C=" + std::to_string(C));
    auto inp = rand(sz(N) * C, 171);
    auto w = rand(sz(C), 172);
    auto out = poisoned(sz(N) * C);
    auto rstd = poisoned(sz(N));
    cpu_->rmsnorm_forward(out.c(), rstd.c(), inp.c(), w.c(), N, C, 1e-5f);
    gpu_->rmsnorm_forward(out.g(), rstd.g(), inp.g(), w.g(), N, C, 1e-5f);
    expect_close(out, kTolElementwise, "rmsnorm_forward out");
    expect_close(rstd, kTolElementwise, "rmsnorm_forward rstd");

    auto dout = rand(sz(N) * C, 173);
    auto dinp = rand(sz(N) * C, 174);
    auto dw = rand(sz(C), 175);
    cpu_->rmsnorm_backward(dinp.c(), dw.c(), dout.c(), inp.c(), w.c(), rstd.c(), N, C);
    gpu_->rmsnorm_backward(dinp.g(), dw.g(), dout.g(), inp.g(), w.g(), rstd.g(), N, C);
    expect_close(dinp, kTolElementwise, "rmsnorm_backward dinp");
    expect_close(dw, kTolElementwise, "rmsnorm_backward dweight");
    cpu_->rmsnorm_backward(nullptr, dw.c(), dout.c(), inp.c(), w.c(), rstd.c(), N, C);
    gpu_->rmsnorm_backward(nullptr, dw.g(), dout.g(), inp.g(), w.g(), rstd.g(), N, C);
    expect_close(dw, kTolElementwise, "rmsnorm_backward dweight (no dinp)");
  }
}

TEST_F(CudaBackendTest, RotaryEmbeddings) {
  // qkv rows of 5 query, 1 key and 1 value head: the first 6 heads turn, the value head stays.
  const int B = 2, T = 37, HS = 16, heads = 6, row = 7 * HS;
  for (const float base : {10000.0f, 500000.0f}) {
    SCOPED_TRACE("base=" + std::to_string(base));
    auto x = rand(sz(B) * T * row, 181);
    const std::vector<float> x0 = x.on_cpu();
    cpu_->rope_forward(x.c(), B, T, row, heads, HS, base);
    gpu_->rope_forward(x.g(), B, T, row, heads, HS, base);
    expect_close(x, kTolElementwise, "rope_forward");
    const std::vector<float> g = x.on_gpu();
    for (int bt = 0; bt < B * T; ++bt) {
      for (int c = heads * HS; c < row; ++c)
        ASSERT_EQ(g[sz(bt) * row + c], x0[sz(bt) * row + c]) << "value head";
    }
    cpu_->rope_backward(x.c(), B, T, row, heads, HS, base);
    gpu_->rope_backward(x.g(), B, T, row, heads, HS, base);
    expect_close(x, kTolElementwise, "rope_backward");
    EXPECT_LT(rel_err(x.on_gpu(), x0), kTolElementwise) << "backward must undo forward";
  }
}

TEST_F(CudaBackendTest, SwiGlu) {
  for (const auto& [N, F] : {std::pair{37, 48}, std::pair{65, 1536}, std::pair{3, 1}}) {
    SCOPED_TRACE("N=" + std::to_string(N) + " F=" + std::to_string(F));
    auto inp = rand(sz(N) * 2 * F, 191);
    auto out = poisoned(sz(N) * F);
    cpu_->swiglu_forward(out.c(), inp.c(), N, F);
    gpu_->swiglu_forward(out.g(), inp.g(), N, F);
    expect_close(out, kTolElementwise, "swiglu_forward");
    auto dout = rand(sz(N) * F, 192);
    auto dinp = rand(sz(N) * 2 * F, 193);
    cpu_->swiglu_backward(dinp.c(), inp.c(), dout.c(), N, F);
    gpu_->swiglu_backward(dinp.g(), inp.g(), dout.g(), N, F);
    expect_close(dinp, kTolElementwise, "swiglu_backward");
  }
}

struct GqaShape {
  int B, T, NH, NKV, HS;
  AttentionMask mask;
};
// Groups of 3 and of 4 query heads, one key/value head for all, and the multi-head case (NKV = NH).
const GqaShape kGqaShapes[] = {
    {2, 13, 6, 2, 16, AttentionMask::Causal}, {1, 64, 8, 2, 8, AttentionMask::Causal},
    {2, 37, 4, 1, 16, AttentionMask::Causal}, {1, 1, 6, 3, 16, AttentionMask::Causal},
    {2, 13, 3, 3, 16, AttentionMask::Causal}, {2, 13, 6, 2, 16, AttentionMask::Bidirectional}};

TEST_F(CudaBackendTest, GroupedQueryAttention) {
  for (const GqaShape& s : kGqaShapes) {
    SCOPED_TRACE("B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " NH=" + std::to_string(s.NH) +
                 " NKV=" + std::to_string(s.NKV) + " HS=" + std::to_string(s.HS));
    const std::size_t N = sz(s.B) * s.T;
    const std::size_t R = sz(s.NH + 2 * s.NKV) * s.HS;  // qkv row
    const std::size_t C = sz(s.NH) * s.HS;              // out row
    const std::size_t TT = sz(s.B) * s.NH * s.T * s.T;
    auto qkv = rand(N * R, 201);
    auto out = poisoned(N * C);
    auto att = poisoned(TT);
    cpu_->gqa_attention_forward(out.c(), att.c(), qkv.c(), s.B, s.T, s.NH, s.NKV, s.HS, s.mask);
    gpu_->gqa_attention_forward(out.g(), att.g(), qkv.g(), s.B, s.T, s.NH, s.NKV, s.HS, s.mask);
    expect_close(out, kTolGemm, "gqa_attention_forward out");
    expect_close(att, kTolGemm, "gqa_attention_forward att");
    auto dout = rand(N * C, 202);
    auto dqkv = rand(N * R, 203);
    auto scratch = poisoned(TT);
    cpu_->gqa_attention_backward(dqkv.c(), scratch.c(), dout.c(), qkv.c(), att.c(), s.B, s.T, s.NH, s.NKV,
                                 s.HS, s.mask);
    gpu_->gqa_attention_backward(dqkv.g(), scratch.g(), dout.g(), qkv.g(), att.g(), s.B, s.T, s.NH, s.NKV,
                                 s.HS, s.mask);
    expect_close(dqkv, kTolGemm, "gqa_attention_backward dqkv");
  }
}

TEST_F(CudaBackendTest, SoftmaxCrossEntropyIgnoresUnpredictedRows) {
  const int N = 9, V = 70, Vp = 80;
  std::vector<int32_t> t = random_tokens(sz(N), V, 64);
  for (int n = 0; n < N; n += 2) t[sz(n)] = kIgnoreTarget;  // a masked LM predicts only some positions
  Mirror<int32_t> targets(*cpu_, *gpu_, t);
  auto logits = rand(sz(N) * Vp, 65);
  auto losses = poisoned(sz(N));
  auto probs = poisoned(sz(N) * Vp);
  cpu_->softmax_xent_forward(losses.c(), probs.c(), logits.c(), targets.c(), N, V, Vp);
  gpu_->softmax_xent_forward(losses.g(), probs.g(), logits.g(), targets.g(), N, V, Vp);
  expect_close(losses, kTolElementwise, "softmax_xent_forward losses with ignored rows");
  const std::vector<float> l = losses.on_gpu();
  for (int n = 0; n < N; n += 2) EXPECT_EQ(l[sz(n)], 0.0f) << "ignored row " << n;
  const std::vector<float> d0 = random_vec(sz(N) * Vp, 66);
  auto dlogits = from(d0);
  cpu_->softmax_xent_backward(dlogits.c(), probs.c(), targets.c(), N, V, Vp, 0.5f);
  gpu_->softmax_xent_backward(dlogits.g(), probs.g(), targets.g(), N, V, Vp, 0.5f);
  expect_close(dlogits, kTolElementwise, "softmax_xent_backward with ignored rows");
  const std::vector<float> d = dlogits.on_gpu();
  for (int i = 0; i < Vp; ++i) ASSERT_EQ(d[sz(i)], d0[sz(i)]) << "ignored row 0 must be untouched";
}

TEST_F(CudaBackendTest, SoftmaxCrossEntropy) {
  struct Shape {
    int N, V, Vp;
  };
  for (const Shape s : {Shape{37, 50, 64}, Shape{5, 1000, 1024}, Shape{3, 50257, 50304}, Shape{4, 64, 64}}) {
    SCOPED_TRACE("N=" + std::to_string(s.N) + " V=" + std::to_string(s.V) + " Vp=" + std::to_string(s.Vp));
    std::vector<float> logits_host = random_vec(sz(s.N) * s.Vp, 61, -4.0f, 4.0f);
    auto logits = from(logits_host);
    auto targets = tokens(sz(s.N), s.V, 62);
    auto losses = poisoned(sz(s.N));
    auto probs = poisoned(sz(s.N) * s.Vp);
    cpu_->softmax_xent_forward(losses.c(), probs.c(), logits.c(), targets.c(), s.N, s.V, s.Vp);
    gpu_->softmax_xent_forward(losses.g(), probs.g(), logits.g(), targets.g(), s.N, s.V, s.Vp);
    expect_close(losses, kTolElementwise, "softmax_xent_forward losses");
    expect_close(probs, kTolElementwise, "softmax_xent_forward probs");
    const std::vector<float> p = probs.on_gpu();
    for (int n = 0; n < s.N; ++n)
      for (int i = s.V; i < s.Vp; ++i) ASSERT_EQ(p[sz(n) * s.Vp + i], 0.0f) << "padded column " << i;

    const std::vector<float> d0 = random_vec(sz(s.N) * s.Vp, 63);
    auto dlogits = from(d0);
    cpu_->softmax_xent_backward(dlogits.c(), probs.c(), targets.c(), s.N, s.V, s.Vp, 0.25f);
    gpu_->softmax_xent_backward(dlogits.g(), probs.g(), targets.g(), s.N, s.V, s.Vp, 0.25f);
    expect_close(dlogits, kTolElementwise, "softmax_xent_backward");
    const std::vector<float> d = dlogits.on_gpu();
    for (int n = 0; n < s.N; ++n)
      for (int i = s.V; i < s.Vp; ++i)
        ASSERT_EQ(d[sz(n) * s.Vp + i], d0[sz(n) * s.Vp + i]) << "padded column " << i << " must be untouched";
  }
}

// ---- optimizers -----------------------------------------------------------------------------------

TEST_F(CudaBackendTest, AdamWAndSgd) {
  const std::size_t n = 100003;
  auto p = rand(n, 71);
  auto m = rand(n, 72);
  auto v = from(random_vec(n, 73, 0.0f, 1.0f));  // second moments are non-negative
  AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.weight_decay = 0.1f;
  for (long step = 1; step <= 3; ++step) {
    SCOPED_TRACE("adamw step " + std::to_string(step));
    auto g = rand(n, static_cast<std::uint32_t>(74 + step));
    cpu_->adamw_update(p.c(), g.c(), m.c(), v.c(), n, cfg, 0.5f, step);
    gpu_->adamw_update(p.g(), g.g(), m.g(), v.g(), n, cfg, 0.5f, step);
    expect_close(p, kTolElementwise, "adamw params");
    expect_close(m, kTolElementwise, "adamw m");
    expect_close(v, kTolElementwise, "adamw v");
  }
  auto q = rand(n, 81);
  auto buf = rand(n, 82);
  SgdConfig sc;
  sc.weight_decay = 1e-3f;
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE("sgd step " + std::to_string(step));
    auto g = rand(n, static_cast<std::uint32_t>(83 + step));
    cpu_->sgd_update(q.c(), g.c(), buf.c(), n, sc, 0.75f);
    gpu_->sgd_update(q.g(), g.g(), buf.g(), n, sc, 0.75f);
    expect_close(q, kTolElementwise, "sgd params");
    expect_close(buf, kTolElementwise, "sgd momentum");
  }
}

// ---- CNN ops --------------------------------------------------------------------------------------

Conv2dShape conv(int B, int IC, int H, int W, int OC, int K, int stride, int pad) {
  Conv2dShape s;
  s.B = B;
  s.IC = IC;
  s.H = H;
  s.W = W;
  s.OC = OC;
  s.KH = K;
  s.KW = K;
  s.stride = stride;
  s.pad = pad;
  return s;
}

const Conv2dShape kConvShapes[] = {
    conv(2, 3, 32, 32, 16, 7, 2, 3),  // ResNet stem
    conv(2, 8, 9, 11, 12, 3, 2, 1),   // odd sizes, stride 2, pad 1
    conv(3, 5, 7, 7, 6, 1, 1, 0),     // 1x1
    conv(2, 16, 8, 8, 16, 3, 1, 1),   // 3x3 same
    conv(2, 16, 8, 8, 32, 1, 2, 0),   // 1x1 stride-2 downsample
};

std::string conv_name(const Conv2dShape& s) {
  return "B=" + std::to_string(s.B) + " IC=" + std::to_string(s.IC) + " " + std::to_string(s.H) + "x" +
         std::to_string(s.W) + " OC=" + std::to_string(s.OC) + " k=" + std::to_string(s.KH) +
         " s=" + std::to_string(s.stride) + " p=" + std::to_string(s.pad);
}

TEST_F(CudaBackendTest, Conv2d) {
  for (const Conv2dShape& s : kConvShapes) {
    for (const bool with_bias : {true, false}) {
      SCOPED_TRACE(conv_name(s) + " bias=" + std::to_string(with_bias));
      const std::size_t in_n = sz(s.B) * s.IC * s.H * s.W;
      const std::size_t out_n = sz(s.B) * s.OC * s.OH() * s.OW();
      const std::size_t w_n = sz(s.OC) * s.IC * s.KH * s.KW;
      DeviceBuffer cws(*cpu_, cpu_->conv2d_workspace_floats(s) * sizeof(float));
      DeviceBuffer gws(*gpu_, gpu_->conv2d_workspace_floats(s) * sizeof(float));
      auto inp = rand(in_n, 91);
      auto w = rand(w_n, 92);
      auto bias = rand(sz(s.OC), 93);
      auto out = poisoned(out_n);
      cpu_->conv2d_forward(out.c(), inp.c(), w.c(), with_bias ? bias.c() : nullptr, cws.as<float>(), s);
      gpu_->conv2d_forward(out.g(), inp.g(), w.g(), with_bias ? bias.g() : nullptr, gws.as<float>(), s);
      expect_close(out, kTolGemm, "conv2d_forward");

      auto dout = rand(out_n, 94);
      auto dinp = rand(in_n, 95);
      auto dw = rand(w_n, 96);
      auto db = rand(sz(s.OC), 97);
      cpu_->conv2d_backward(dinp.c(), dw.c(), with_bias ? db.c() : nullptr, dout.c(), inp.c(), w.c(),
                            cws.as<float>(), s);
      gpu_->conv2d_backward(dinp.g(), dw.g(), with_bias ? db.g() : nullptr, dout.g(), inp.g(), w.g(),
                            gws.as<float>(), s);
      expect_close(dinp, kTolGemm, "conv2d_backward dinp");
      expect_close(dw, kTolGemm, "conv2d_backward dweight");
      expect_close(db, kTolElementwise, "conv2d_backward dbias");
      // The stem's input gradient is never needed: dinp absent.
      cpu_->conv2d_backward(nullptr, dw.c(), nullptr, dout.c(), inp.c(), w.c(), cws.as<float>(), s);
      gpu_->conv2d_backward(nullptr, dw.g(), nullptr, dout.g(), inp.g(), w.g(), gws.as<float>(), s);
      expect_close(dw, kTolGemm, "conv2d_backward dweight (no dinp)");
    }
  }
}

TEST_F(CudaBackendTest, BatchNorm) {
  struct Shape {
    int B, C, HW;
  };
  for (const Shape s : {Shape{3, 5, 49}, Shape{4, 16, 1}, Shape{2, 64, 256}, Shape{8, 3, 1024}}) {
    SCOPED_TRACE("B=" + std::to_string(s.B) + " C=" + std::to_string(s.C) + " HW=" + std::to_string(s.HW));
    const std::size_t n = sz(s.B) * s.C * s.HW;
    auto inp = from(random_vec(n, 101, -1.0f, 3.0f));  // a non-zero mean
    auto w = rand(sz(s.C), 102);
    auto bias = rand(sz(s.C), 103);
    auto rmean = rand(sz(s.C), 104);
    auto rvar = from(random_vec(sz(s.C), 105, 0.5f, 2.0f));
    auto out = poisoned(n);
    auto mean = poisoned(sz(s.C));
    auto rstd = poisoned(sz(s.C));
    cpu_->batchnorm_forward(out.c(), mean.c(), rstd.c(), rmean.c(), rvar.c(), inp.c(), w.c(), bias.c(), s.B,
                            s.C, s.HW, 0.1f, 1e-5f, true);
    gpu_->batchnorm_forward(out.g(), mean.g(), rstd.g(), rmean.g(), rvar.g(), inp.g(), w.g(), bias.g(), s.B,
                            s.C, s.HW, 0.1f, 1e-5f, true);
    expect_close(out, kTolElementwise, "batchnorm_forward out");
    expect_close(mean, kTolElementwise, "batchnorm_forward mean");
    expect_close(rstd, kTolElementwise, "batchnorm_forward rstd");
    expect_close(rmean, kTolElementwise, "batchnorm_forward running_mean");
    expect_close(rvar, kTolElementwise, "batchnorm_forward running_var");

    auto dout = rand(n, 106);
    auto dinp = rand(n, 107);
    auto dw = rand(sz(s.C), 108);
    auto db = rand(sz(s.C), 109);
    cpu_->batchnorm_backward(dinp.c(), dw.c(), db.c(), dout.c(), inp.c(), w.c(), mean.c(), rstd.c(), s.B, s.C,
                             s.HW);
    gpu_->batchnorm_backward(dinp.g(), dw.g(), db.g(), dout.g(), inp.g(), w.g(), mean.g(), rstd.g(), s.B, s.C,
                             s.HW);
    expect_close(dinp, kTolElementwise, "batchnorm_backward dinp");
    expect_close(dw, kTolElementwise, "batchnorm_backward dweight");
    expect_close(db, kTolElementwise, "batchnorm_backward dbias");

    // Evaluation mode: running statistics, nothing updated; null weight/bias mean identity affine.
    auto eout = poisoned(n);
    cpu_->batchnorm_forward(eout.c(), nullptr, nullptr, rmean.c(), rvar.c(), inp.c(), nullptr, nullptr, s.B,
                            s.C, s.HW, 0.1f, 1e-5f, false);
    gpu_->batchnorm_forward(eout.g(), nullptr, nullptr, rmean.g(), rvar.g(), inp.g(), nullptr, nullptr, s.B,
                            s.C, s.HW, 0.1f, 1e-5f, false);
    expect_close(eout, kTolElementwise, "batchnorm_forward eval");
    expect_close(rmean, kTolElementwise, "running_mean after eval");
  }
}

Pool2dShape pool(int B, int C, int H, int W, int k, int stride, int pad) {
  Pool2dShape s;
  s.B = B;
  s.C = C;
  s.H = H;
  s.W = W;
  s.k = k;
  s.stride = stride;
  s.pad = pad;
  return s;
}

TEST_F(CudaBackendTest, MaxPool) {
  for (const Pool2dShape& s :
       {pool(2, 3, 13, 13, 3, 2, 1), pool(2, 4, 12, 10, 3, 2, 1), pool(1, 2, 8, 8, 2, 2, 0)}) {
    for (const bool ties : {false, true}) {
      SCOPED_TRACE("H=" + std::to_string(s.H) + " W=" + std::to_string(s.W) + " k=" + std::to_string(s.k) +
                   " ties=" + std::to_string(ties));
      const std::size_t in_n = sz(s.B) * s.C * s.H * s.W;
      const std::size_t out_n = sz(s.B) * s.C * s.OH() * s.OW();
      std::vector<float> x = random_vec(in_n, 111);
      if (ties) {
        for (float& v : x) v = std::round(v);  // only -1, 0, 1: many equal maxima in every window
      }
      auto inp = from(x);
      auto out = poisoned(out_n);
      Mirror<int32_t> am(*cpu_, *gpu_, std::vector<int32_t>(out_n, -7));
      cpu_->maxpool2d_forward(out.c(), am.c(), inp.c(), s);
      gpu_->maxpool2d_forward(out.g(), am.g(), inp.g(), s);
      expect_close(out, kTolElementwise, "maxpool2d_forward");
      EXPECT_EQ(am.on_gpu(), am.on_cpu()) << "argmax must be the first maximum, as on the CPU";

      auto dout = rand(out_n, 112);
      auto dinp = rand(in_n, 113);
      cpu_->maxpool2d_backward(dinp.c(), dout.c(), am.c(), s);
      gpu_->maxpool2d_backward(dinp.g(), dout.g(), am.g(), s);
      expect_close(dinp, kTolElementwise, "maxpool2d_backward");
    }
  }
}

TEST_F(CudaBackendTest, AvgPoolAndGlobalAvgPool) {
  for (const Pool2dShape& s :
       {pool(2, 3, 8, 8, 2, 2, 0), pool(2, 3, 13, 13, 3, 2, 1), pool(1, 4, 7, 9, 3, 1, 1)}) {
    SCOPED_TRACE("H=" + std::to_string(s.H) + " W=" + std::to_string(s.W) + " k=" + std::to_string(s.k) +
                 " s=" + std::to_string(s.stride) + " p=" + std::to_string(s.pad));
    const std::size_t in_n = sz(s.B) * s.C * s.H * s.W;
    const std::size_t out_n = sz(s.B) * s.C * s.OH() * s.OW();
    auto inp = rand(in_n, 121);
    auto out = poisoned(out_n);
    cpu_->avgpool2d_forward(out.c(), inp.c(), s);
    gpu_->avgpool2d_forward(out.g(), inp.g(), s);
    expect_close(out, kTolElementwise, "avgpool2d_forward");
    auto dout = rand(out_n, 122);
    auto dinp = rand(in_n, 123);
    cpu_->avgpool2d_backward(dinp.c(), dout.c(), s);
    gpu_->avgpool2d_backward(dinp.g(), dout.g(), s);
    expect_close(dinp, kTolElementwise, "avgpool2d_backward");
  }
  struct Shape {
    int B, C, HW;
  };
  for (const Shape s : {Shape{2, 5, 49}, Shape{3, 7, 1}, Shape{2, 512, 16}, Shape{1, 3, 1000}}) {
    SCOPED_TRACE("global B=" + std::to_string(s.B) + " C=" + std::to_string(s.C) +
                 " HW=" + std::to_string(s.HW));
    const std::size_t n = sz(s.B) * s.C * s.HW;
    auto inp = rand(n, 124);
    auto out = poisoned(sz(s.B) * s.C);
    cpu_->global_avgpool_forward(out.c(), inp.c(), s.B, s.C, s.HW);
    gpu_->global_avgpool_forward(out.g(), inp.g(), s.B, s.C, s.HW);
    expect_close(out, kTolElementwise, "global_avgpool_forward");
    auto dout = rand(sz(s.B) * s.C, 125);
    auto dinp = rand(n, 126);
    cpu_->global_avgpool_backward(dinp.c(), dout.c(), s.B, s.C, s.HW);
    gpu_->global_avgpool_backward(dinp.g(), dout.g(), s.B, s.C, s.HW);
    expect_close(dinp, kTolElementwise, "global_avgpool_backward");
  }
}

// ---- determinism ----------------------------------------------------------------------------------

// Runs `op` twice on GPU buffers reset to the same contents and requires bit-identical outputs.
class Repeat {
 public:
  explicit Repeat(Backend& gpu) : gpu_(&gpu) {}
  float* buffer(const std::vector<float>& init) {
    inits_.push_back(init);
    bufs_.emplace_back(*gpu_, init.size() * sizeof(float));
    return bufs_.back().as<float>();
  }
  template <typename Op>
  void expect_bit_identical(Op op, const std::string& what) {
    std::vector<std::vector<float>> first;
    for (int run = 0; run < 2; ++run) {
      for (std::size_t i = 0; i < bufs_.size(); ++i)
        gpu_->copy_to_device(bufs_[i].data(), inits_[i].data(), inits_[i].size() * sizeof(float));
      op();
      for (std::size_t i = 0; i < bufs_.size(); ++i) {
        std::vector<float> v(inits_[i].size());
        gpu_->copy_to_host(v.data(), bufs_[i].data(), v.size() * sizeof(float));
        if (run == 0) {
          first.push_back(std::move(v));
        } else {
          EXPECT_TRUE(bit_equal(v, first[i])) << what << ": buffer " << i << " differs between two runs";
        }
      }
    }
  }

 private:
  Backend* gpu_;
  std::vector<std::vector<float>> inits_;
  std::vector<DeviceBuffer> bufs_;
};

// Reductions (atomics-free partial sums in a fixed order) give the same bits on every run, op by op.
TEST_F(CudaBackendTest, EncoderBackwardIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int B = 4, T = 64, C = 48, V = 7;
  Mirror<int32_t> tok(*cpu_, g, random_tokens(sz(B) * T, V, 131));
  Repeat r(g);
  float* dwte = r.buffer(random_vec(sz(V) * C, 132));
  float* dwpe = r.buffer(random_vec(sz(T) * C, 133));
  float* dout = r.buffer(random_vec(sz(B) * T * C, 134));
  r.expect_bit_identical([&] { g.encoder_backward(dwte, dwpe, dout, tok.g(), B, T, C); }, "encoder_backward");
}

TEST_F(CudaBackendTest, LayernormIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int N = 1000, C = 96;
  Repeat r(g);
  float* inp = r.buffer(random_vec(sz(N) * C, 141));
  float* w = r.buffer(random_vec(sz(C), 142));
  float* out = r.buffer(nan_vec(sz(N) * C));
  float* mean = r.buffer(nan_vec(sz(N)));
  float* rstd = r.buffer(nan_vec(sz(N)));
  float* dout = r.buffer(random_vec(sz(N) * C, 143));
  float* dinp = r.buffer(random_vec(sz(N) * C, 144));
  float* dw = r.buffer(random_vec(sz(C), 145));
  float* db = r.buffer(random_vec(sz(C), 146));
  r.expect_bit_identical(
      [&] {
        g.layernorm_forward(out, mean, rstd, inp, w, w, N, C);
        g.layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
      },
      "layernorm");
}

TEST_F(CudaBackendTest, MatmulBackwardIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int N = 777, IC = 96, OC = 130;
  Repeat r(g);
  float* inp = r.buffer(random_vec(sz(N) * IC, 151));
  float* w = r.buffer(random_vec(sz(OC) * IC, 152));
  float* dout = r.buffer(random_vec(sz(N) * OC, 153));
  float* dinp = r.buffer(random_vec(sz(N) * IC, 154));
  float* dw = r.buffer(random_vec(sz(OC) * IC, 155));
  float* db = r.buffer(random_vec(sz(OC), 156));
  r.expect_bit_identical([&] { g.matmul_backward(dinp, dw, db, dout, inp, w, N, IC, OC); },
                         "matmul_backward");
}

TEST_F(CudaBackendTest, AttentionIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int B = 2, T = 37, C = 48, NH = 3;
  Repeat r(g);
  float* qkv = r.buffer(random_vec(sz(B) * T * 3 * C, 161));
  float* out = r.buffer(nan_vec(sz(B) * T * C));
  float* att = r.buffer(nan_vec(sz(B) * NH * T * T));
  float* dout = r.buffer(random_vec(sz(B) * T * C, 162));
  float* dqkv = r.buffer(random_vec(sz(B) * T * 3 * C, 163));
  float* scratch = r.buffer(nan_vec(sz(B) * NH * T * T));
  r.expect_bit_identical(
      [&] {
        g.attention_forward(out, att, qkv, B, T, C, NH, AttentionMask::Causal);
        g.attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, AttentionMask::Causal);
      },
      "attention");
}

TEST_F(CudaBackendTest, LlamaOpsAreBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int B = 2, T = 37, NH = 6, NKV = 2, HS = 16, C = NH * HS, R = (NH + 2 * NKV) * HS, F = 40;
  const int N = B * T;
  Repeat r(g);
  float* x = r.buffer(random_vec(sz(N) * C, 211));
  float* w = r.buffer(random_vec(sz(C), 212));
  float* norm = r.buffer(nan_vec(sz(N) * C));
  float* rstd = r.buffer(nan_vec(sz(N)));
  float* dnorm = r.buffer(random_vec(sz(N) * C, 213));
  float* dx = r.buffer(random_vec(sz(N) * C, 214));
  float* dw = r.buffer(random_vec(sz(C), 215));
  r.expect_bit_identical(
      [&] {
        g.rmsnorm_forward(norm, rstd, x, w, N, C, 1e-5f);
        g.rmsnorm_backward(dx, dw, dnorm, x, w, rstd, N, C);
      },
      "rmsnorm");
  float* qkv = r.buffer(random_vec(sz(N) * R, 216));
  float* out = r.buffer(nan_vec(sz(N) * C));
  float* att = r.buffer(nan_vec(sz(B) * NH * T * T));
  float* dout = r.buffer(random_vec(sz(N) * C, 217));
  float* dqkv = r.buffer(random_vec(sz(N) * R, 218));
  float* scratch = r.buffer(nan_vec(sz(B) * NH * T * T));
  float* gu = r.buffer(random_vec(sz(N) * 2 * F, 219));
  float* act = r.buffer(nan_vec(sz(N) * F));
  float* dgu = r.buffer(random_vec(sz(N) * 2 * F, 220));
  r.expect_bit_identical(
      [&] {
        g.rope_forward(qkv, B, T, R, NH + NKV, HS, 10000.0f);
        g.gqa_attention_forward(out, att, qkv, B, T, NH, NKV, HS, AttentionMask::Causal);
        g.gqa_attention_backward(dqkv, scratch, dout, qkv, att, B, T, NH, NKV, HS, AttentionMask::Causal);
        g.rope_backward(dqkv, B, T, R, NH + NKV, HS, 10000.0f);
        g.swiglu_forward(act, gu, N, F);
        g.swiglu_backward(dgu, gu, act, N, F);
      },
      "rope, grouped-query attention, swiglu");
}

TEST_F(CudaBackendTest, Conv2dBackwardIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const Conv2dShape s = conv(2, 8, 9, 11, 12, 3, 2, 1);
  Repeat r(g);
  float* inp = r.buffer(random_vec(sz(s.B) * s.IC * s.H * s.W, 171));
  float* w = r.buffer(random_vec(sz(s.OC) * s.IC * 9, 172));
  float* dout = r.buffer(random_vec(sz(s.B) * s.OC * s.OH() * s.OW(), 173));
  float* dinp = r.buffer(random_vec(sz(s.B) * s.IC * s.H * s.W, 174));
  float* dw = r.buffer(random_vec(sz(s.OC) * s.IC * 9, 175));
  float* db = r.buffer(random_vec(sz(s.OC), 176));
  r.expect_bit_identical([&] { g.conv2d_backward(dinp, dw, db, dout, inp, w, nullptr, s); },
                         "conv2d_backward");
}

TEST_F(CudaBackendTest, BatchnormIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int B = 4, C = 16, HW = 100;
  Repeat r(g);
  float* inp = r.buffer(random_vec(sz(B) * C * HW, 181));
  float* w = r.buffer(random_vec(sz(C), 182));
  float* out = r.buffer(nan_vec(sz(B) * C * HW));
  float* mean = r.buffer(nan_vec(sz(C)));
  float* rstd = r.buffer(nan_vec(sz(C)));
  float* rm = r.buffer(random_vec(sz(C), 183));
  float* rv = r.buffer(random_vec(sz(C), 184, 0.5f, 1.5f));
  float* dout = r.buffer(random_vec(sz(B) * C * HW, 185));
  float* dinp = r.buffer(random_vec(sz(B) * C * HW, 186));
  float* dw = r.buffer(random_vec(sz(C), 187));
  float* db = r.buffer(random_vec(sz(C), 188));
  r.expect_bit_identical(
      [&] {
        g.batchnorm_forward(out, mean, rstd, rm, rv, inp, w, w, B, C, HW, 0.1f, 1e-5f, true);
        g.batchnorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, B, C, HW);
      },
      "batchnorm");
}

TEST_F(CudaBackendTest, SoftmaxXentForwardIsBitIdenticalRunToRun) {
  Backend& g = *gpu_;
  const int N = 9, V = 50257, Vp = 50304;
  Mirror<int32_t> targets(*cpu_, g, random_tokens(sz(N), V, 191));
  Repeat r(g);
  float* logits = r.buffer(random_vec(sz(N) * Vp, 192, -4.0f, 4.0f));
  float* losses = r.buffer(nan_vec(sz(N)));
  float* probs = r.buffer(nan_vec(sz(N) * Vp));
  r.expect_bit_identical([&] { g.softmax_xent_forward(losses, probs, logits, targets.g(), N, V, Vp); },
                         "softmax_xent_forward");
}

// ---- threads --------------------------------------------------------------------------------------

// The DDP communication thread copies gradients to and from the host while the main thread keeps
// enqueueing ops on the same backend.
TEST_F(CudaBackendTest, HostCopiesFromAnotherThread) {
  Backend& g = *gpu_;
  const int N = 256, IC = 512, OC = 512;
  auto inp = rand(sz(N) * IC, 201);
  auto w = rand(sz(OC) * IC, 202);
  auto out = poisoned(sz(N) * OC);
  const std::vector<float> payload = random_vec(1 << 20, 203);
  DeviceBuffer shared(g, payload.size() * sizeof(float));
  std::size_t mismatches = 0;
  std::thread comm([&] {
    std::vector<float> back(payload.size());
    for (int i = 0; i < 20; ++i) {
      g.copy_to_device(shared.data(), payload.data(), payload.size() * sizeof(float));
      g.copy_to_host(back.data(), shared.data(), back.size() * sizeof(float));
      mismatches += bit_equal(back, payload) ? 0 : 1;
    }
  });
  for (int i = 0; i < 50; ++i) g.matmul_forward(out.g(), inp.g(), w.g(), nullptr, N, IC, OC);
  comm.join();
  EXPECT_EQ(mismatches, 0u);
  cpu_->matmul_forward(out.c(), inp.c(), w.c(), nullptr, N, IC, OC);
  expect_close(out, kTolGemm, "matmul while another thread copies");
}

}  // namespace
}  // namespace tt
