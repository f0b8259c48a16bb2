#include "data/token_loader.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <system_error>
#include <utility>

#include "base/error.h"
#include "core/rng.h"
#include "data/shard_files.h"
#include "tee/bytes.h"
#include "tee/digest.h"

namespace tt {
namespace fs = std::filesystem;

namespace {}  // namespace

TokenDataset::TokenDataset(const std::vector<fs::path>& files) {
  if (files.empty()) throw InputError("no token shards given; run `teetrain prepare-text` first");
  shards_.reserve(files.size());
  tee::Sha256 digest;
  for (const auto& f : files) {
    shards_.push_back(read_token_shard(f, &digest));
    const int v = shards_.back().vocab();
    if (shards_.size() > 1 && v != vocab_) {
      throw InputError("token shard '" + f.string() + "' has vocabulary " + std::to_string(v) + " but '" +
                       shards_.front().path.string() + "' has " + std::to_string(vocab_) +
                       "; shards of one dataset must share a vocabulary");
    }
    vocab_ = v;
  }
  sha256_ = tee::to_hex(digest.finish());
}

TokenDataset TokenDataset::open(const std::string& spec, const std::string& split) {
  const std::vector<fs::path> files = find_split_files(spec, split, ".bin");
  if (files.empty() && is_data_file(spec + "_" + split + ".bin.sealed")) {
    throw InputError("--data " + spec + " holds sealed shards (" + spec + "_" + split +
                     ".bin.sealed), which only TEE mode opens: add --tee cc or --tee fast with the data "
                     "owner's --key-file");
  }
  if (files.empty()) {
    throw InputError("no " + split + " token shards found at '" + spec +
                     "' (a .bin file, a directory, a glob or a prefix); run `teetrain prepare-text` first");
  }
  return TokenDataset(files);
}

uint64_t TokenDataset::num_tokens() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s.tokens.size();
  return n;
}

std::string TokenDataset::describe() const {
  std::string what =
      shards_.size() == 1 ? shards_[0].path.string() : std::to_string(shards_.size()) + " shards";
  return what + " (" + human_count(num_tokens()) + " tokens, vocab " + std::to_string(vocab_) + ")";
}

TokenLoader::TokenLoader(const TokenDataset& data, int T, uint64_t seed, bool shuffle) : data_(data), T_(T) {
  if (T < 1) throw InputError("--seq must be at least 1 (got " + std::to_string(T) + ")");
  // Windows of shard i: floor((n_i - 1) / T), the number of stride-T starts with T+1 tokens left.
  shard_first_window_.reserve(data.shards().size() + 1);
  shard_first_window_.push_back(0);
  for (const auto& s : data.shards()) {
    const uint64_t n = s.tokens.size();
    num_windows_ += n > 0 ? (n - 1) / static_cast<uint64_t>(T) : 0;
    shard_first_window_.push_back(num_windows_);
  }
  if (num_windows_ == 0) {
    throw InputError("data too small for --seq " + std::to_string(T) + ": " + data.describe() +
                     " has no shard with the " + std::to_string(T + 1) +
                     " tokens one sample needs; use a smaller --seq or more text");
  }
  if (num_windows_ > std::numeric_limits<uint32_t>::max()) {
    throw InputError("data too large: " + std::to_string(num_windows_) +
                     " windows exceed 2^32; use a larger --seq or fewer shards");
  }
  order_ = WindowOrder(num_windows_, seed, shuffle);
}

uint64_t TokenLoader::window_of(uint64_t g) {
  return order_.window_of(g);
}

const uint16_t* TokenLoader::window_tokens(uint64_t window) const {
  // The shard holding `window`: the last one whose first window is <= window.
  const auto it = std::upper_bound(shard_first_window_.begin(), shard_first_window_.end(), window);
  const auto shard = static_cast<std::size_t>(it - shard_first_window_.begin() - 1);
  const uint64_t local = window - shard_first_window_[shard];
  return data_.shards()[shard].tokens.data() + local * static_cast<uint64_t>(T_);
}

void TokenLoader::fill(Batch& out, uint64_t first_sample, int count) {
  if (count < 0) throw InputError("batch size must be >= 0 (got " + std::to_string(count) + ")");
  const auto T = static_cast<std::size_t>(T_);
  out.B = count;
  out.T = T_;
  out.tokens.resize(static_cast<std::size_t>(count) * T);   // (B, T)
  out.targets.resize(static_cast<std::size_t>(count) * T);  // (B, T)
  for (int b = 0; b < count; ++b) {
    const uint16_t* w = window_tokens(window_of(first_sample + static_cast<uint64_t>(b)));  // (T+1)
    int32_t* x = out.tokens.data() + static_cast<std::size_t>(b) * T;
    int32_t* y = out.targets.data() + static_cast<std::size_t>(b) * T;
    for (std::size_t t = 0; t < T; ++t) {
      x[t] = w[t];
      y[t] = w[t + 1];
    }
  }
}

}  // namespace tt
