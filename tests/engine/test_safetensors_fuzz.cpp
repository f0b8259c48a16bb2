// Fuzz-style test of the safetensors parser (engine/safetensors.h): random bytes, every truncation,
// bit flips, type-mangled header JSON, and shapes whose element count overflows 64 bits or is
// negative. Every input decodes or throws InputError naming the file (exit 2): never another
// exception, a crash or a sanitizer report (shape arithmetic is checked and unsigned).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/safetensors.h"
#include "tests/common/fuzz.h"

namespace tt {
namespace {

using tt::testing::fuzz_inputs;
using tt::testing::FuzzPlan;
using tt::testing::run_parser;

std::string to_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A file with the given header JSON and `body` bytes of tensor data.
std::string with_header(const std::string& header, std::size_t body) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + std::string(body, '\x01');
}

int decode(const std::string& bytes, const std::string& what) {
  return run_parser(
      [&] { safetensors_decode(std::as_bytes(std::span(bytes.data(), bytes.size())), "fuzz.safetensors"); },
      what);
}

std::string valid_file() {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7};
  return to_string(
      safetensors_encode({{"a", {2, 3}, a}, {"b", {1}, b}, {"empty", {0, 5}, {}}}, {{"step", "3"}}));
}

TEST(SafetensorsFuzz, RandomTruncatedAndFlippedBytes) {
  const std::string valid = valid_file();
  EXPECT_EQ(decode(valid, "valid"), 0);
  FuzzPlan plan;
  plan.truncate_upto = valid.size();
  plan.flip_all_bits_upto = valid.size();  // every bit of this small file
  int refused = 0;
  for (const auto& in : fuzz_inputs(valid, plan)) {
    const int r = decode(in.bytes, in.what);
    EXPECT_TRUE(r == 0 || r == 2) << in.what;
    refused += r == 2;
  }
  EXPECT_GT(refused, 0);
}

TEST(SafetensorsFuzz, HugeNegativeAndMangledShapesAreInputErrors) {
  const std::vector<std::string> shapes = {"[-1]",
                                           "[-1,-4]",
                                           "[4611686018427387904]",
                                           "[9223372036854775807]",
                                           "[18446744073709551615]",
                                           "[4294967296,4294967296]",
                                           "[4294967296,4294967296,0]",
                                           "[65536,65536,65536,65536]",
                                           "[1.5]",
                                           "[\"6\"]",
                                           "[null]",
                                           "[[6]]",
                                           "6",
                                           "{}",
                                           "null",
                                           "[1e300]",
                                           "[-9223372036854775808]"};
  for (const auto& shape : shapes) {
    const std::string header = R"({"a":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,24]}})";
    const std::string bytes = with_header(header, 24);
    try {
      safetensors_decode(std::as_bytes(std::span(bytes.data(), bytes.size())), "model.safetensors");
      ADD_FAILURE() << shape << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << shape << ": " << e.what();
    }
  }
}

TEST(SafetensorsFuzz, TypeMangledHeaderJson) {
  const nlohmann::ordered_json base = nlohmann::ordered_json::parse(
      R"({"__metadata__":{"step":"3"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})");
  const std::vector<nlohmann::ordered_json> values = {nullptr,
                                                      true,
                                                      -1,
                                                      0,
                                                      24,
                                                      1.5,
                                                      "F32",
                                                      "x",
                                                      nlohmann::ordered_json::array(),
                                                      nlohmann::ordered_json::object(),
                                                      {0, 24},
                                                      {24, 0},
                                                      {0, 1},
                                                      {0, 24, 48},
                                                      {-1, 24},
                                                      {0, 18446744073709551615ull},
                                                      {1.5, 24},
                                                      {"0", "24"}};
  int cases = 0;
  auto run = [&](const nlohmann::ordered_json& header, const std::string& what) {
    const int r = decode(with_header(header.dump(), 24), what);
    EXPECT_TRUE(r == 0 || r == 2) << what;
    ++cases;
  };
  for (const auto& v : values) {
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      nlohmann::ordered_json h = base;
      h["a"][field] = v;
      run(h, std::string(field) + " := " + v.dump());
    }
    nlohmann::ordered_json h = base;
    h["a"] = v;
    run(h, "tensor := " + v.dump());
    h = base;
    h["__metadata__"] = v;
    run(h, "__metadata__ := " + v.dump());
    h = base;
    h["__metadata__"]["step"] = v;
    run(h, "__metadata__.step := " + v.dump());
    run(v, "header := " + v.dump());
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    nlohmann::ordered_json h = base;
    h["a"].erase(field);
    run(h, std::string("without ") + field);
  }
  // A header length past the end, and a header that is not JSON.
  std::string bytes = with_header("{}", 0);
  bytes[7] = '\x7f';
  EXPECT_EQ(decode(bytes, "huge header length"), 2);
  EXPECT_EQ(decode(with_header("{\"a\":", 0), "cut JSON"), 2);
  EXPECT_EQ(decode(with_header(std::string(100000, '[') + std::string(100000, ']'), 0), "deep nesting"), 2);
  EXPECT_GT(cases, 100);
}

}  // namespace
}  // namespace tt
