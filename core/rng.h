// Deterministic, platform-independent random numbers (parameter init, data order, sampling).
// std::normal_distribution is implementation-defined, so we roll our own: SplitMix64 for bits,
// Box-Muller for normals. Same seed -> same stream on every compiler and thread count.
#pragma once
#include <cmath>
#include <cstdint>

namespace tt {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) (n > 0); the tiny modulo bias is irrelevant here.
  uint64_t below(uint64_t n) { return next_u64() % n; }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    const double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586476925 * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Derives an independent stream seed from a base seed and a purpose/index (e.g. per rank, per epoch).
inline uint64_t derive_seed(uint64_t base, uint64_t a, uint64_t b = 0) {
  Rng r(base ^ (a * 0xD1B54A32D192ED03ULL) ^ (b * 0x8CB92BA72F3D8DD7ULL));
  r.next_u64();
  return r.next_u64();
}

}  // namespace tt
