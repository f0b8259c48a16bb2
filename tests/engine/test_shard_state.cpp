// Packing a rank's optimizer shard and expanding it back (engine/gradients/shard.h), in place and staged
// through host copies as on a GPU, whose optimizer state the host cannot address: both give the same
// floats, and a round trip keeps the shard and zeros the rest.
#include <gtest/gtest.h>

#include <vector>

#include "core/cpu/cpu_backend.h"
#include "engine/gradients/shard.h"

namespace tt {
namespace {

constexpr std::size_t kSlots = 2;  // AdamW's m and v

std::vector<float> counting(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5f + static_cast<float>(i);
  return v;
}

// Buckets of unequal sizes at P = 3, so the ring chunks differ in length (Note [Shard layout]).
std::vector<ParamRange> rank_one_shard(std::size_t* n) {
  const std::vector<Bucket> buckets = {
      {.begin = 0, .end = 10}, {.begin = 10, .end = 27}, {.begin = 27, .end = 31}};
  *n = 31;
  return shard_ranges(buckets, 1, 3);
}

TEST(ShardState, StagedPackingGivesTheSameFloatsAsInPlace) {
  auto backend = make_cpu_backend(1);
  std::size_t n = 0;
  const std::vector<ParamRange> shard = rank_one_shard(&n);
  const std::size_t s_floats = shard_floats(shard);
  ASSERT_GT(s_floats, 0u);
  ASSERT_LT(s_floats, n);
  const std::vector<float> full = counting(kSlots * n);  // [slots, n]
  std::vector<float> in_place(kSlots * s_floats, -1.0f), staged(kSlots * s_floats, -2.0f);
  pack_shard(shard, n, kSlots, full.data(), in_place.data());
  pack_shard_staged(*backend, shard, n, kSlots, full.data(), staged.data());
  EXPECT_EQ(staged, in_place);
  // The packed floats are the shard's, slot after slot, ranges in order.
  std::size_t at = 0;
  for (std::size_t s = 0; s < kSlots; ++s)
    for (const ParamRange& r : shard)
      for (std::size_t i = 0; i < r.count; ++i) EXPECT_EQ(in_place[at++], full[s * n + r.offset + i]);

  std::vector<float> back_in_place(kSlots * n, 7.0f), back_staged(kSlots * n, 9.0f);
  expand_shard(shard, n, kSlots, in_place.data(), back_in_place.data());
  expand_shard_staged(*backend, shard, n, kSlots, staged.data(), back_staged.data());
  EXPECT_EQ(back_staged, back_in_place);
  std::vector<bool> owned(n, false);
  for (const ParamRange& r : shard)
    for (std::size_t i = 0; i < r.count; ++i) owned[r.offset + i] = true;
  for (std::size_t s = 0; s < kSlots; ++s)
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(back_staged[s * n + i], owned[i] ? full[s * n + i] : 0.0f) << "slot " << s << " float " << i;
}

}  // namespace
}  // namespace tt
