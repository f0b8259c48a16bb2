// Shared helpers for the data/ tests.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "data/token_shard.h"
#include "engine/core/rng.h"

namespace tt::datatest {

// A byte-level shard (vocabulary 256) of n random tokens, so windows are distinguishable.
inline void write_random_shard(const std::filesystem::path& p, int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<uint16_t>(rng.below(256));
  write_token_shard(p, t, 256);
}

}  // namespace tt::datatest
