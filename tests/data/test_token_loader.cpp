// TokenDataset resolution and TokenLoader: windows, shuffling, determinism, rank split, resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/token_loader.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tests/common/temp_dir.h"

namespace tt {
namespace {

using tt::testing::TempDir;

// A shard whose tokens are first, first+1, ...: a window is identified by its first token, and a
// window is contiguous exactly when each token is its predecessor + 1. vocab 0 = unrecorded.
void write_ramp(const std::filesystem::path& p, int first, int n) {
  std::vector<uint16_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = static_cast<uint16_t>(first + i);
  write_token_shard(p, t, 0);
}

// Two shards with a gap in values, so a window crossing shards would show as a jump. Opened by
// prefix + split, as the CLI does.
TokenDataset two_shards(const TempDir& dir) {
  write_ramp(dir / "d_train_000.bin", 0, 1000);
  write_ramp(dir / "d_train_001.bin", 5000, 1000);
  return TokenDataset::open((dir / "d").string(), "train");
}

std::vector<int32_t> first_tokens(const Batch& b) {
  std::vector<int32_t> out;
  for (int i = 0; i < b.B; ++i) out.push_back(b.tokens[static_cast<std::size_t>(i * b.T)]);
  return out;
}

TEST(TokenLoader, WindowsAndShiftedTargets) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  constexpr int T = 8;
  TokenLoader loader(data, T, 1, true);
  EXPECT_EQ(loader.num_windows(), 2u * (999 / T));  // 124 windows per shard, none across shards
  Batch b;
  loader.fill(b, 0, static_cast<int>(loader.num_windows()));
  ASSERT_EQ(b.B, static_cast<int>(loader.num_windows()));
  ASSERT_EQ(b.T, T);
  ASSERT_EQ(b.tokens.size(), static_cast<std::size_t>(b.B * T));
  ASSERT_EQ(b.targets.size(), b.tokens.size());
  for (int i = 0; i < b.B; ++i) {
    const int32_t* x = &b.tokens[static_cast<std::size_t>(i * T)];
    const int32_t* y = &b.targets[static_cast<std::size_t>(i * T)];
    EXPECT_TRUE(x[0] % T == 0 || (x[0] - 5000) % T == 0) << "window starts at a stride-T offset";
    for (int t = 0; t < T; ++t) {
      EXPECT_EQ(y[t], x[t] + 1);  // contiguous: within one shard
      if (t + 1 < T) {
        EXPECT_EQ(y[t], x[t + 1]);  // targets are inputs shifted by one
      }
    }
  }
}

TEST(TokenLoader, EveryWindowOncePerEpoch) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader loader(data, 8, 42, true);
  const auto W = static_cast<int>(loader.num_windows());
  Batch e0, e1;
  loader.fill(e0, 0, W);
  loader.fill(e1, static_cast<uint64_t>(W), W);
  for (const Batch* b : {&e0, &e1}) {
    const auto f = first_tokens(*b);
    EXPECT_EQ(std::set<int32_t>(f.begin(), f.end()).size(), static_cast<std::size_t>(W));
  }
  EXPECT_NE(first_tokens(e0), first_tokens(e1));  // each epoch has its own order
  const auto f0 = first_tokens(e0);
  EXPECT_FALSE(std::is_sorted(f0.begin(), f0.end()));  // and it is shuffled
  std::vector<uint64_t> windows;
  for (uint64_t g = 0; g < static_cast<uint64_t>(W); ++g) windows.push_back(loader.window_of(g));
  std::set<uint64_t> unique(windows.begin(), windows.end());
  EXPECT_EQ(unique.size(), static_cast<std::size_t>(W));
  EXPECT_EQ(*unique.rbegin(), static_cast<uint64_t>(W - 1));
}

TEST(TokenLoader, NoShuffleIsDatasetOrder) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader loader(data, 8, 42, false);
  const uint64_t W = loader.num_windows();
  for (const uint64_t g : std::vector<uint64_t>{0, 1, W - 1, W, 3 * W + 5})
    EXPECT_EQ(loader.window_of(g), g % W);
  Batch b;
  loader.fill(b, 123, 2);  // window 123 is shard 0's last; 124 is shard 1's first
  EXPECT_EQ(first_tokens(b), (std::vector<int32_t>{123 * 8, 5000}));
}

TEST(TokenLoader, SameSeedSameBatchesDifferentSeedDifferent) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader a(data, 16, 7, true);
  TokenLoader b(data, 16, 7, true);
  TokenLoader c(data, 16, 8, true);
  Batch ba, bb, bc;
  for (uint64_t g = 0; g < 200; g += 10) {
    a.fill(ba, g, 10);
    b.fill(bb, g, 10);
    c.fill(bc, g, 10);
    EXPECT_EQ(ba.tokens, bb.tokens);
    EXPECT_EQ(ba.targets, bb.targets);
  }
  a.fill(ba, 0, 32);
  c.fill(bc, 0, 32);
  EXPECT_NE(ba.tokens, bc.tokens);
}

TEST(TokenLoader, RankSlicesConcatenateToGlobalBatch) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader loader(data, 8, 3, true);
  Batch whole, lo, hi;
  for (uint64_t g : {0ull, 5ull, 246ull}) {  // 246: straddles the epoch boundary (W = 248)
    loader.fill(whole, g, 4);
    loader.fill(lo, g, 2);
    loader.fill(hi, g + 2, 2);
    std::vector<int32_t> cat = lo.tokens;
    cat.insert(cat.end(), hi.tokens.begin(), hi.tokens.end());
    EXPECT_EQ(whole.tokens, cat);
    cat = lo.targets;
    cat.insert(cat.end(), hi.targets.begin(), hi.targets.end());
    EXPECT_EQ(whole.targets, cat);
  }
  // The DDP schedule: B=3, P=2, accum=2 -> G=12; all (micro-step, rank) slices tile [s*G, (s+1)*G).
  constexpr int B = 3, P = 2, K = 2;
  for (uint64_t step : {0ull, 1ull, 20ull}) {
    loader.fill(whole, step * B * P * K, B * P * K);
    std::vector<int32_t> cat;
    for (int k = 0; k < K; ++k) {
      for (int r = 0; r < P; ++r) {
        loader.fill(lo, global_sample_index(step, k, r, B, P, K), B);
        cat.insert(cat.end(), lo.tokens.begin(), lo.tokens.end());
      }
    }
    EXPECT_EQ(whole.tokens, cat);
  }
}

TEST(TokenLoader, ResumeAtAnySampleIndex) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader straight(data, 8, 11, true);
  std::vector<int32_t> stream;
  Batch b;
  for (uint64_t g = 0; g < 600; g += 6) {  // more than two epochs
    straight.fill(b, g, 6);
    stream.insert(stream.end(), b.tokens.begin(), b.tokens.end());
  }
  for (uint64_t start : {37ull, 247ull, 500ull}) {
    TokenLoader resumed(data, 8, 11, true);  // a fresh process resuming from a checkpoint
    resumed.fill(b, start, 5);
    const std::vector<int32_t> expect(stream.begin() + static_cast<std::ptrdiff_t>(start * 8),
                                      stream.begin() + static_cast<std::ptrdiff_t>((start + 5) * 8));
    EXPECT_EQ(b.tokens, expect) << "resume at " << start;
  }
}

TEST(TokenLoader, ZeroCountAndErrors) {
  TempDir dir;
  const TokenDataset data = two_shards(dir);
  TokenLoader loader(data, 8, 1, true);
  Batch b;
  loader.fill(b, 10, 0);
  EXPECT_EQ(b.B, 0);
  EXPECT_TRUE(b.tokens.empty());
  EXPECT_THROW(loader.fill(b, 0, -1), InputError);
  EXPECT_THROW(TokenLoader(data, 0, 1, true), InputError);
  // 1000 tokens per shard: --seq 999 fits (1000 = T+1), --seq 1000 does not.
  EXPECT_EQ(TokenLoader(data, 999, 1, true).num_windows(), 2u);
  try {
    TokenLoader too_long(data, 1000, 1, true);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("too small for --seq 1000"), std::string::npos) << e.what();
  }
}

TEST(TokenDataset, OpenResolvesSpecs) {
  TempDir dir;
  write_ramp(dir / "fortunes_train.bin", 0, 100);
  write_ramp(dir / "fortunes_val.bin", 0, 10);
  write_ramp(dir / "web_train_000001.bin", 0, 20);
  write_ramp(dir / "web_train_000000.bin", 0, 30);
  auto names = [](const TokenDataset& d) {
    std::vector<std::string> n;
    for (const auto& s : d.shards()) n.push_back(s.path.filename().string());
    return n;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(TokenDataset::open((dir / "fortunes").string(), "train")), V{"fortunes_train.bin"});
  EXPECT_EQ(names(TokenDataset::open((dir / "fortunes").string(), "val")), V{"fortunes_val.bin"});
  EXPECT_EQ(names(TokenDataset::open((dir / "web").string(), "train")),
            (V{"web_train_000000.bin", "web_train_000001.bin"}));
  EXPECT_EQ(names(TokenDataset::open(dir.path().string(), "train")),
            (V{"fortunes_train.bin", "web_train_000000.bin", "web_train_000001.bin"}));
  EXPECT_EQ(names(TokenDataset::open((dir / "*_val.bin").string(), "ignored")), V{"fortunes_val.bin"});
  EXPECT_EQ(names(TokenDataset::open((dir / "web_train_000001.bin").string(), "val")),
            V{"web_train_000001.bin"});
  const auto d = TokenDataset::open((dir / "web").string(), "train");
  EXPECT_EQ(d.num_tokens(), 50u);
  EXPECT_EQ(d.vocab(), kGpt2Vocab);
  EXPECT_NE(d.describe().find("2 shards"), std::string::npos) << d.describe();
  try {
    TokenDataset::open((dir / "nothing").string(), "train");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("nothing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("teetrain prepare-text"), std::string::npos) << msg;
  }
}

// The content digest is of the files' bytes as read, one after another in the dataset's order: what
// `cat` of them piped to sha256sum prints. Same size, other tokens: another digest.
TEST(TokenDataset, DigestsTheBytesItRead) {
  TempDir dir;
  const TokenDataset d = two_shards(dir);
  std::string both;
  for (const char* f : {"d_train_000.bin", "d_train_001.bin"}) {
    std::ifstream in(dir / f, std::ios::binary);
    both.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_EQ(d.sha256(), tee::to_hex(tee::sha256(both)));
  write_ramp(dir / "d_train_001.bin", 5001, 1000);
  const TokenDataset other = TokenDataset::open((dir / "d").string(), "train");
  EXPECT_EQ(other.num_tokens(), d.num_tokens());
  EXPECT_NE(other.sha256(), d.sha256());
}

TEST(TokenDataset, RejectsMixedVocabularies) {
  TempDir dir;
  write_token_shard(dir / "a.bin", std::vector<uint16_t>{1, 2}, 256);
  write_ramp(dir / "b.bin", 0, 2);
  EXPECT_THROW(TokenDataset({dir / "a.bin", dir / "b.bin"}), InputError);
  EXPECT_THROW(TokenDataset(std::vector<std::filesystem::path>{}), InputError);
}

}  // namespace
}  // namespace tt
