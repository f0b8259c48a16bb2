// Shared helpers for the tee/ tests.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tee/bytes.h"

namespace tt::tee::test {

inline std::vector<std::uint8_t> hex(std::string_view h) {
  return from_hex(h);
}

template <std::size_t N>
std::array<std::uint8_t, N> hex_array(std::string_view h) {
  const auto v = from_hex(h);
  std::array<std::uint8_t, N> a{};
  if (v.size() != N) throw std::invalid_argument("hex_array: wrong length");
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// Bytes 0, 1, 2, ... (mod 251, so chunk boundaries do not line up with the pattern).
inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed = 0) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i + seed) % 251);
  return v;
}

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("tt_tee_test_" + std::to_string(::getpid()) + "_" + to_hex(random_array<4>()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace tt::tee::test
