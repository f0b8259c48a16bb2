// Large safetensors headers parse, correctly and in file order: a header of 60k tensors (a real
// model's state dict has thousands). The parse is linear (engine/checkpoint/safetensors.cpp: TopLevelKeys);
// tests/bench/bench_safetensors.cpp measures it, this test only checks the result.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/safetensors.h"

namespace tt {
namespace {

constexpr std::size_t kTensors = 60'000;

// Names in an order that is neither sorted nor reverse-sorted, so file order is really checked.
std::string name_of(std::size_t i) {
  return "layer." + std::to_string((i * 7919) % kTensors) + ".w";
}

TEST(SafetensorsHeader, SixtyThousandTensorsParseInFileOrder) {
  std::vector<float> values(2 * kTensors);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  std::vector<SafeTensor> tensors;
  for (std::size_t i = 0; i < kTensors; ++i)
    tensors.push_back({name_of(i), {1, 2}, std::span<const float>(values).subspan(2 * i, 2)});
  const std::vector<std::byte> file = safetensors_encode(tensors, {{"format", "pt"}});

  const SafetensorsHeader h = safetensors_parse_header(file, "big.safetensors");
  ASSERT_EQ(h.tensors.size(), kTensors);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  for (std::size_t i = 0; i < kTensors; ++i) {
    const SafetensorsEntry& t = h.tensors[i];
    ASSERT_EQ(t.name, name_of(i)) << i;
    ASSERT_EQ(t.begin, 8 * i) << i;
    ASSERT_EQ(t.end, 8 * i + 8) << i;
    ASSERT_EQ(t.shape, (std::vector<std::int64_t>{1, 2})) << i;
  }
  const DecodedSafetensors d = safetensors_decode(file, "big.safetensors");
  ASSERT_EQ(d.tensors.size(), kTensors);
  EXPECT_EQ(d.tensors.at(name_of(12345)).data, (std::vector<float>{24690.0f, 24691.0f}));
}

// The encoder writes its header entry by entry (an ordered_json object was quadratic to fill): the
// text is still exactly what that object's dump() gives, so files stay byte-identical.
TEST(SafetensorsHeader, EncoderTextMatchesAnOrderedJsonDump) {
  const std::vector<float> v = {1, 2, 3, 4, 5};
  const std::vector<SafeTensor> tensors = {{"b.weight", {2, 2}, std::span<const float>(v).first(4)},
                                           {"a \"quoted\"", {1}, std::span<const float>(v).last(1)}};
  nlohmann::ordered_json expected = nlohmann::ordered_json::object();
  expected["__metadata__"] = std::map<std::string, std::string>{{"format", "pt"}, {"a", "b"}};
  expected["b.weight"] = {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}};
  expected["a \"quoted\""] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {16, 20}}};
  const std::vector<std::byte> file = safetensors_encode(tensors, {{"format", "pt"}, {"a", "b"}});
  std::string header(reinterpret_cast<const char*>(file.data()) + 8, file.size() - 8 - 20);
  while (!header.empty() && header.back() == ' ') header.pop_back();  // alignment padding
  EXPECT_EQ(header, expected.dump());
  const std::vector<std::byte> empty = safetensors_encode({}, {});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(empty.data()) + 8, 2), "{}");
}

// The two passes (key order, values) must agree on what a header is: a repeated key keeps its last
// value and is listed once, where the key first appeared; malformed JSON is refused by both.
TEST(SafetensorsHeader, RepeatedKeysAndMalformedJson) {
  const auto file = [](const std::string& header, std::size_t body) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
      out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    out += header + std::string(body, '\0');
    const auto* p = reinterpret_cast<const std::byte*>(out.data());
    return std::vector<std::byte>(p, p + out.size());
  };
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  const std::string a2 = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})";
  const SafetensorsHeader h = safetensors_parse_header(file("{" + a + "," + b + "," + a2 + "}", 16), "x");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_THROW(safetensors_parse_header(file("{" + a + ",}", 4), "x"), InputError);
  EXPECT_THROW(safetensors_parse_header(file("{" + a + "} trailing", 4), "x"), InputError);
}

}  // namespace
}  // namespace tt
