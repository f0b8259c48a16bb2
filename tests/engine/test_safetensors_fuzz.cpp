// Fuzz-style test of the safetensors parsers (engine/checkpoint/safetensors.h): safetensors_decode and the
// header-only reader safetensors_read_header (ckpt inspect), which share one header validator. Random
// bytes, every truncation, bit flips, type-mangled header JSON, and shapes whose element count
// overflows 64 bits or is negative. Every input parses or throws InputError naming the file (exit 2):
// never another exception, a crash or a sanitizer report (shape arithmetic is checked and unsigned).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/safetensors.h"
#include "tests/common/fuzz.h"

namespace tt {
namespace {

using tt::testing::fuzz_inputs;
using tt::testing::FuzzDir;
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

void write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

// The header-only reader on `bytes` written to a file: 0 accepted, 2 InputError (which must name the
// file). It must agree with safetensors_parse_header on the same bytes in memory, and accept whatever
// decode accepts.
int read_header(const FuzzDir& dir, const std::string& bytes, const std::string& what) {
  const std::filesystem::path p = dir / "fuzz.safetensors";
  write(p, bytes);
  const int r = run_parser([&] { safetensors_read_header(p); }, what);
  if (r == 2) {
    try {
      safetensors_read_header(p);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << what << ": " << e.what();
    }
  }
  const int in_memory = run_parser(
      [&] { safetensors_parse_header(std::as_bytes(std::span(bytes.data(), bytes.size())), "mem"); }, what);
  EXPECT_EQ(r, in_memory) << what;
  if (decode(bytes, what) == 0) {
    EXPECT_EQ(r, 0) << what << ": decode accepts what the header reader refuses";
  }
  return r;
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

TEST(SafetensorsFuzz, HeaderReaderRandomTruncatedAndFlippedBytes) {
  const FuzzDir dir;
  const std::string valid = valid_file();
  EXPECT_EQ(read_header(dir, valid, "valid"), 0);
  FuzzPlan plan;
  plan.truncate_upto = valid.size();
  plan.flip_all_bits_upto = valid.size();
  int refused = 0;
  for (const auto& in : fuzz_inputs(valid, plan)) {
    const int r = read_header(dir, in.bytes, in.what);
    EXPECT_TRUE(r == 0 || r == 2) << in.what;
    refused += r == 2;
  }
  EXPECT_GT(refused, 0);
}

TEST(SafetensorsFuzz, HeaderReaderDescribesTheFileInOrder) {
  const FuzzDir dir;
  const std::string valid = valid_file();
  write(dir / "m.safetensors", valid);
  const SafetensorsHeader h = safetensors_read_header(dir / "m.safetensors");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].dtype, "F32");
  EXPECT_EQ(h.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.tensors[0].numel, 6u);
  EXPECT_EQ(h.tensors[0].begin, 0u);
  EXPECT_EQ(h.tensors[0].end, 24u);
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_EQ(h.tensors[1].begin, 24u);
  EXPECT_EQ(h.tensors[1].end, 28u);
  EXPECT_EQ(h.tensors[2].name, "empty");
  EXPECT_EQ(h.tensors[2].numel, 0u);
  EXPECT_EQ(h.metadata, (std::map<std::string, std::string>{{"step", "3"}}));
  EXPECT_EQ(h.data_offset + h.data_size, valid.size());
  EXPECT_EQ(h.data_size, 28u);

  // File order, not name order; other dtypes are described (decode takes only F32).
  const std::string mixed = with_header(
      R"({"z":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},"a":{"dtype":"I64","shape":[1],"data_offsets":[6,14]}})",
      14);
  write(dir / "mixed.safetensors", mixed);
  const SafetensorsHeader m = safetensors_read_header(dir / "mixed.safetensors");
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[0].name, "z");
  EXPECT_EQ(m.tensors[0].dtype, "BF16");
  EXPECT_EQ(m.tensors[1].name, "a");
  EXPECT_EQ(decode(mixed, "mixed dtypes"), 2);

  // The data section is not read: a (sparse) 1 GiB body costs nothing.
  {
    std::ofstream out(dir / "big.safetensors", std::ios::binary);
    const std::string head =
        with_header(R"({"w":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}})", 0);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
  }
  std::filesystem::resize_file(dir / "big.safetensors", std::filesystem::file_size(dir / "big.safetensors") +
                                                            (std::uint64_t{1} << 30));
  EXPECT_EQ(safetensors_read_header(dir / "big.safetensors").tensors.at(0).numel, std::uint64_t{1} << 28);
}

TEST(SafetensorsFuzz, HeaderReaderRefusals) {
  const FuzzDir dir;
  auto refused = [&](const std::string& bytes, const std::string& what) {
    EXPECT_EQ(read_header(dir, bytes, what), 2) << what;
  };
  refused("", "empty file");
  refused("\x08\0\0\0", "short length");
  std::string huge = with_header("{}", 0);
  huge[3] = '\x40';  // 2^30 + 2: over the cap (and past the end)
  refused(huge, "header over 1 GiB");
  std::string past = with_header("{}", 0);
  past[0] = '\x03';
  refused(past, "header length past the end");
  refused(with_header("{\"a\":", 0), "cut JSON");
  refused(with_header("[]", 0), "not an object");
  refused(with_header(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4), "unknown dtype");
  refused(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      8),
          "overlapping tensors");
  refused(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "data past the end");
  refused(with_header(R"({"__metadata__":{"n":3}})", 0), "non-string metadata");
  try {
    safetensors_read_header(dir / "missing.safetensors");
    ADD_FAILURE() << "a missing file was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_EQ(run_parser([&] { safetensors_read_header(dir.path()); }, "a directory"), 2);
}

TEST(SafetensorsFuzz, HugeNegativeAndMangledShapesAreInputErrors) {
  const FuzzDir dir;
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
    EXPECT_EQ(read_header(dir, bytes, shape), 2) << shape;
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
  const FuzzDir dir;
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
    const std::string bytes = with_header(header.dump(), 24);
    const int r = decode(bytes, what);
    EXPECT_TRUE(r == 0 || r == 2) << what;
    const int h = read_header(dir, bytes, what);
    EXPECT_TRUE(h == 0 || h == 2) << what;
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
  EXPECT_EQ(read_header(dir, bytes, "huge header length"), 2);
  EXPECT_EQ(decode(with_header("{\"a\":", 0), "cut JSON"), 2);
  const std::string deep = with_header(std::string(100000, '[') + std::string(100000, ']'), 0);
  EXPECT_EQ(decode(deep, "deep nesting"), 2);
  EXPECT_EQ(read_header(dir, deep, "deep nesting"), 2);
  EXPECT_GT(cases, 100);
}

}  // namespace
}  // namespace tt
