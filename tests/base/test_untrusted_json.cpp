// base/untrusted_json.h: nesting is counted without recursion, strings do not count, and a document
// nested far past the bound is refused whole (no stack overflow on copy or destruction).
#include <gtest/gtest.h>

#include <string>

#include "base/untrusted_json.h"

namespace tt {
namespace {

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

TEST(UntrustedJson, DepthCountsObjectsAndArraysNotStrings) {
  EXPECT_EQ(json_depth("1", 64), 0u);
  EXPECT_EQ(json_depth(R"({"a": [1, {"b": 2}]})", 64), 3u);
  EXPECT_EQ(json_depth(R"({"a": "[[[[{{{{", "b": "\"[[["})", 64), 1u);  // brackets inside strings
  EXPECT_EQ(json_depth(nested(10), 64), 10u);
  EXPECT_EQ(json_depth(nested(100000), 64), 65u);  // stops once past the limit
}

TEST(UntrustedJson, ParsesUpToTheBoundAndRefusesBeyondIt) {
  const nlohmann::json ok = parse_untrusted_json(nested(kMaxJsonDepth));
  ASSERT_FALSE(ok.is_discarded());
  const nlohmann::json copy = ok;  // copying a value at the bound is fine
  EXPECT_EQ(copy, ok);
  EXPECT_TRUE(parse_untrusted_json(nested(kMaxJsonDepth + 1)).is_discarded());
  // 100,000 levels of objects: what crashed verify-evidence and `ckpt verify`.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(100000, '}');
  EXPECT_TRUE(parse_untrusted_json(deep).is_discarded());
  EXPECT_TRUE(parse_untrusted_json("{not json").is_discarded());
  EXPECT_EQ(parse_untrusted_json(R"({"k": [1, 2]})")["k"][1], 2);
}

}  // namespace
}  // namespace tt
