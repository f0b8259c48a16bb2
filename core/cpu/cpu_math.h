// Vectorisable float exp and tanh for the CPU backend's elementwise loops.
//
// glibc's expf/tanhf are scalar calls (libmvec is only used under -ffast-math), which made GELU and
// the vocabulary softmax the slowest non-matmul ops. These are plain arithmetic, inlined, so GCC turns
// a loop over them into AVX2/FMA code. Accuracy: fast_exp within ~2 ulp (Cephes polynomial);
// fast_tanh within ~2e-7 absolute, which is what GELU's 0.5 * x * (1 + tanh) needs.
#pragma once
// The clamps and selects below only vectorise when GCC may assume floating-point operations do not
// trap (we never enable FP exceptions); the pragma says so for the rest of each op file that includes
// this header (only core/cpu/*.cpp do). It does not reach the functions GCC outlines for OpenMP
// regions, so the vector loops are the out-of-line span functions at the end of this header, called
// from those regions; and GCC/Clang builtins stand in for <bit>/<cmath> functions, which GCC will not
// inline here if their header was compiled before the pragma.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <cstddef>
#include <cstdint>

namespace tt::cpu {

// exp(x) for float x; 0 for x < -87 (below the smallest normal result), saturates at exp(88) (callers
// here only need x <= 0 or a saturating tanh), NaN for NaN.
inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln 2 split in two for an exact k * ln2_hi (Cody-Waite)
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Clamp with comparisons, not fminf/fmaxf (library calls unless -ffinite-math-only); NaN maps to
  // -87 here so the float-to-int conversion below stays defined, and is restored at the end.
  float xc = -87.0f < x ? x : -87.0f;
  xc = xc < 88.0f ? xc : 88.0f;
  // Round to nearest by adding and subtracting 1.5 * 2^23 (floor() is a library call unless
  // -fno-trapping-math); k in [-126, 127], so 2^k is a normal float.
  constexpr float kRound = 12582912.0f;
  const float k = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2 / 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float two_k = __builtin_bit_cast(float, (static_cast<std::int32_t>(k) + 127) << 23);
  const float e = x < -87.0f ? 0.0f : p * two_k;
  return x == x ? e : x;  // NaN in, NaN out: a diverging run must still show NaN losses
}

// tanh(u) = sign(u) * (1 - 2 / (exp(2|u|) + 1)); exp saturates, so large |u| gives exactly +-1.
inline float fast_tanh(float u) {
  // Sign handling on the bits: std::fabs/copysign are <cmath> wrappers compiled without the pragma
  // above if <cmath> came first, and GCC will not inline them into this function then.
  const std::uint32_t bits = __builtin_bit_cast(std::uint32_t, u);
  const float a = __builtin_bit_cast(float, bits & 0x7fffffffu);
  const float t = 1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f);
  return __builtin_bit_cast(float, __builtin_bit_cast(std::uint32_t, t) | (bits & 0x80000000u));
}

// out[i] = exp(in[i] - shift), i < n. out may equal in.
[[gnu::noinline]] inline void exp_shifted(float* out, const float* in, float shift, std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) out[i] = fast_exp(in[i] - shift);
}

constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) over n elements. out may equal inp.
[[gnu::noinline]] inline void gelu_span(float* out, const float* inp, std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + fast_tanh(kGeluS * (x + kGeluA * x * x * x)));
  }
}

// dinp += gelu'(inp) * dout over n elements.
[[gnu::noinline]] inline void gelu_backward_span(float* dinp, const float* inp, const float* dout,
                                                 std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float th = fast_tanh(kGeluS * (x + kGeluA * x * x * x));
    // d/dx [0.5 x (1 + tanh(u))] = 0.5 (1 + tanh u) + 0.5 x sech^2(u) u', sech^2 = 1 - tanh^2.
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluS * (1.0f + 3.0f * kGeluA * x * x);
    dinp[i] += local * dout[i];
  }
}

// SwiGLU over one row: out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), i < n.
[[gnu::noinline]] inline void swiglu_span(float* out, const float* gate, const float* up, std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + fast_exp(-g)) * up[i];
  }
}

// dgate += dout * up * silu'(gate), dup += dout * silu(gate), i < n; silu'(g) = s (1 + g (1 - s)) with
// s = sigmoid(g).
[[gnu::noinline]] inline void swiglu_backward_span(float* dgate, float* dup, const float* gate,
                                                   const float* up, const float* dout, std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float s = 1.0f / (1.0f + fast_exp(-g));
    dgate[i] += dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
    dup[i] += dout[i] * g * s;
  }
}

}  // namespace tt::cpu
