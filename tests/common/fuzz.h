// Deterministic fuzz-style inputs for parsers of untrusted bytes: truncations, bit flips, byte
// overwrites and random buffers derived from one valid input with a fixed seed, and a runner that
// accepts only the error types a parser may throw (InputError -> exit 2, IntegrityError -> exit 3).
// No sanitizer finding, crash, hang or other exception type is acceptable; the ASan/UBSan build runs
// these tests too.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "base/error.h"
#include "tee/errors.h"

namespace tt::testing {

// A scratch directory for the thousands of small files a fuzz test writes: in /dev/shm (tmpfs) when
// there is one, so the test's time does not depend on a busy disk (each sealed write fsyncs).
class FuzzDir {
 public:
  FuzzDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "fuzz";
    std::error_code ec;
    const std::filesystem::path shm = "/dev/shm";
    const auto root = std::filesystem::is_directory(shm, ec) && ::access(shm.c_str(), W_OK) == 0
                          ? shm
                          : std::filesystem::temp_directory_path();
    path_ = root / ("tt_fuzz_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_);
  }
  ~FuzzDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  FuzzDir(const FuzzDir&) = delete;
  FuzzDir& operator=(const FuzzDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct FuzzInput {
  std::string what;  // for failure messages: "truncated to 17", "bit 3 of byte 40", ...
  std::string bytes;
};

struct FuzzPlan {
  std::size_t truncate_upto = 300;      // every prefix of length 0 .. min(this, size - 1)
  std::size_t flip_all_bits_upto = 64;  // every bit of the first bytes (headers)
  int random_flips = 200;               // single bit flips anywhere
  int random_overwrites = 100;          // a byte set to 0x00, 0xff, 0x7f or 0x80 (or its complement) anywhere
  int random_buffers = 100;             // random bytes, 0 .. 2 * size long
  std::uint64_t seed = 1;
};

inline std::vector<FuzzInput> fuzz_inputs(const std::string& valid, const FuzzPlan& plan) {
  std::vector<FuzzInput> out;
  std::mt19937_64 rng(plan.seed);  // the raw engine (not a distribution): the same stream everywhere
  const std::size_t n = valid.size();
  for (std::size_t len = 0; len < n && len <= plan.truncate_upto; ++len)
    out.push_back({"truncated to " + std::to_string(len), valid.substr(0, len)});
  for (std::size_t i = 0; i < n && i < plan.flip_all_bits_upto; ++i) {
    for (int b = 0; b < 8; ++b) {
      std::string s = valid;
      s[i] = static_cast<char>(s[i] ^ (1 << b));
      out.push_back({"bit " + std::to_string(b) + " of byte " + std::to_string(i), s});
    }
  }
  for (int k = 0; n > 0 && k < plan.random_flips; ++k) {
    const std::size_t i = rng() % n;
    const int b = static_cast<int>(rng() % 8);
    std::string s = valid;
    s[i] = static_cast<char>(s[i] ^ (1 << b));
    out.push_back({"bit " + std::to_string(b) + " of byte " + std::to_string(i), s});
  }
  const unsigned char values[] = {0x00, 0xff, 0x7f, 0x80};
  for (int k = 0; n > 0 && k < plan.random_overwrites; ++k) {
    const std::size_t i = rng() % n;
    unsigned char v = values[rng() % 4];
    if (static_cast<unsigned char>(valid[i]) == v) v = static_cast<unsigned char>(~v);  // always a change
    std::string s = valid;
    s[i] = static_cast<char>(v);
    out.push_back({"byte " + std::to_string(i) + " set to " + std::to_string(v), s});
  }
  for (int k = 0; k < plan.random_buffers; ++k) {
    std::string s(static_cast<std::size_t>(rng() % (2 * n + 1)), '\0');
    for (auto& c : s) c = static_cast<char>(rng() & 0xff);
    out.push_back({"random buffer " + std::to_string(k) + " of " + std::to_string(s.size()) + " bytes", s});
  }
  return out;
}

// What a parser did with one input: 0 accepted, 2 InputError, 3 IntegrityError. Any other exception
// fails the test (a crash or sanitizer report ends it).
template <typename F>
int run_parser(F&& parse, const std::string& what) {
  try {
    parse();
    return 0;
  } catch (const tt::InputError&) {
    return 2;
  } catch (const tt::IntegrityError&) {
    return 3;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception " << typeid(e).name() << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": unexpected non-std exception";
  }
  return -1;
}

}  // namespace tt::testing
