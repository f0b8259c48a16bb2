// for_param_chunks: the parameters visited in bounded host chunks give the same bytes (so the same
// params_sha256) as one whole copy, in order, and write-back changes the model chunk by chunk.
#include <gtest/gtest.h>

#include <vector>

#include "engine/param_chunks.h"
#include "tee/digest.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

std::vector<float> whole_copy(enginetest::TinyRun& run) {
  std::vector<float> v(run.model.num_params());
  run.backend->copy_to_host(v.data(), run.model.param_data(), v.size() * sizeof(float));
  return v;
}

TEST(ParamChunks, VisitsEveryParameterInOrderInBoundedChunks) {
  enginetest::TinyRun run(7, false);
  const std::vector<float> whole = whole_copy(run);
  ASSERT_GT(whole.size(), 10000u);
  std::vector<float> seen;
  std::vector<std::size_t> sizes;
  for_param_chunks(
      *run.backend, run.model, false,
      [&](std::span<float> c) {
        sizes.push_back(c.size());
        seen.insert(seen.end(), c.begin(), c.end());
      },
      1000);
  EXPECT_EQ(seen, whole);
  ASSERT_EQ(sizes.size(), (whole.size() + 999) / 1000);
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 1000u);
  EXPECT_EQ(sizes.back(), whole.size() - 1000 * (sizes.size() - 1));
  // The hash over chunks is the hash of the whole buffer.
  EXPECT_EQ(params_sha256(*run.backend, run.model),
            tee::to_hex(tee::sha256(tee::bytes_of(std::span<const float>(whole)))));
}

TEST(ParamChunks, WriteBackChangesTheModelChunkByChunk) {
  enginetest::TinyRun run(7, false);
  const std::vector<float> before = whole_copy(run);
  const std::string sha = params_sha256(*run.backend, run.model);
  for_param_chunks(
      *run.backend, run.model, true,
      [](std::span<float> c) {
        for (float& x : c) x = -x;
      },
      777);
  const std::vector<float> negated = whole_copy(run);
  for (std::size_t i = 0; i < before.size(); ++i) ASSERT_EQ(negated[i], -before[i]) << i;
  EXPECT_NE(params_sha256(*run.backend, run.model), sha);
  // Without write-back the model is left alone.
  for_param_chunks(
      *run.backend, run.model, false, [](std::span<float> c) { c[0] = 42.0f; }, 777);
  EXPECT_EQ(whole_copy(run), negated);
}

}  // namespace
}  // namespace tt
