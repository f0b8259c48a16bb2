// Helpers shared by the transformer tests (GPT-2, BERT): fixture loading and tolerant comparisons.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tt::gpt2_test {

// Tests run with the repository root as working directory (tt_test). dir: a folder of tests/fixtures.
inline std::string fixture_path(const std::string& name, const std::string& dir = "gpt2_tiny") {
  return "tests/fixtures/" + dir + "/" + name;
}

template <typename T>
std::vector<T> read_bin(const std::string& name, const std::string& dir = "gpt2_tiny") {
  std::ifstream f(fixture_path(name, dir), std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing fixture " << fixture_path(name, dir);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size() % sizeof(T), 0u) << name;
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline nlohmann::json read_manifest(const std::string& dir = "gpt2_tiny") {
  std::ifstream f(fixture_path("manifest.json", dir));
  EXPECT_TRUE(f.good()) << "missing fixture manifest";
  return nlohmann::json::parse(f);
}

// Largest violation of |a - b| <= atol + rtol * |b| (<= 0 means all within tolerance), with the index.
struct Mismatch {
  double excess = -1;
  std::size_t index = 0;
  double got = 0;
  double want = 0;
};
inline Mismatch worst(const float* got, const float* want, std::size_t n, double rtol, double atol) {
  Mismatch m;
  m.excess = -1e300;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i];
    const double w = want[i];
    const double e = std::isfinite(g) ? std::abs(g - w) - (atol + rtol * std::abs(w)) : 1e300;
    if (e > m.excess) m = {e, i, g, w};
  }
  return m;
}

}  // namespace tt::gpt2_test
