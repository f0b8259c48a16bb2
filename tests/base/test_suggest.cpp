// base/suggest.h: the edit distance behind "did you mean ...?" and when a name is close enough.
#include <gtest/gtest.h>

#include "base/suggest.h"

namespace tt {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("steps", "steps"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("stpes", "steps"), 1u);  // one swap of neighbours, not two substitutions
  EXPECT_EQ(edit_distance("trian", "train"), 1u);
  EXPECT_EQ(edit_distance("step", "steps"), 1u);
  EXPECT_EQ(edit_distance("stepss", "steps"), 1u);
  EXPECT_EQ(edit_distance("stebs", "steps"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", "cab"), 2u);
  EXPECT_EQ(edit_distance("abc", "cab"), edit_distance("cab", "abc"));
}

TEST(ClosestMatch, SuggestsOnlyWhatIsClose) {
  const std::vector<std::string> flags = {"--steps", "--seq", "--seed", "--save-every", "--summary"};
  EXPECT_EQ(closest_match("--stpes", flags), "--steps");
  EXPECT_EQ(closest_match("--sed", flags), "--seq");  // a tie goes to the first candidate
  EXPECT_EQ(closest_match("--summray", flags), "--summary");
  EXPECT_EQ(closest_match("--steps", flags), "--steps");
  EXPECT_EQ(closest_match("--bucket-mb", flags), std::nullopt);
  EXPECT_EQ(closest_match("--x", flags), std::nullopt);
  EXPECT_EQ(closest_match("--steps", {}), std::nullopt);
  const std::vector<std::string> commands = {"train", "eval", "sample", "bench", "models", "model"};
  EXPECT_EQ(closest_match("trian", commands), "train");
  EXPECT_EQ(closest_match("modle", commands), "model");
  EXPECT_EQ(closest_match("x", commands), std::nullopt);  // one letter is not a name
  EXPECT_EQ(closest_match("ab", {"ba"}), std::nullopt);   // one swap in two letters is half of them
  EXPECT_EQ(closest_match("prepare", {"prepare-text"}), std::nullopt);  // five edits
}

}  // namespace
}  // namespace tt
