// Token datasets and the deterministic, resumable, rank-splittable loader over them.
//
// Windows. Each shard is cut into non-overlapping windows of T+1 tokens with stride T (the last
// token of a window is the first of the next): inputs are tokens [0, T) of a window, targets are
// tokens [1, T+1), i.e. the inputs shifted by one. Windows never cross a shard boundary (as in
// llm.c); a shard's tail shorter than a window is not used. W = num_windows().
//
// Samples. A global sample index g is a run-wide counter that only grows:
//   epoch = g / W,  j = g % W,  window = perm_epoch(j)
// where perm_epoch is a Fisher-Yates permutation of [0, W) drawn with tt::Rng seeded by
// derive_seed(seed, kDataStream, epoch), or the identity when shuffle is off (validation). So every
// window appears exactly once per epoch, and the stream depends only on (data, T, seed), never on
// the rank count, the batch split or where a run was resumed.
//
// Data parallelism. At optimizer step s with per-rank batch B, P ranks and K accumulation
// micro-steps, the global batch is G = B*P*K samples, and rank r at micro-step k takes
//   samples  s*G + k*B*P + r*B + [0, B)          (global_sample_index below)
// The ranks' slices are disjoint, together they are exactly [s*G, (s+1)*G), and a checkpoint only
// needs s (or the next g) to resume the same stream with any P.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model.h"
#include "data/token_shard.h"
#include "data/window_order.h"

namespace tt {

// One or more shards read into memory. All shards must share one vocabulary.
class TokenDataset {
 public:
  // Reads the given shards, in the given order. Throws InputError (missing or malformed file,
  // mismatched vocabularies, empty list).
  explicit TokenDataset(const std::vector<std::filesystem::path>& files);

  // Resolves `spec` to shards, in sorted order:
  //   - an existing file: that shard (split is ignored);
  //   - a glob on the file name ("dir/fineweb_train_*.bin"): the matching files;
  //   - a directory: its *.bin files named "<anything>_<split>.bin" or "<anything>_<split>_<n>.bin"
  //     (llm.c's "tiny_shakespeare_val.bin", "fineweb_train_000001.bin");
  //   - otherwise a prefix: "<spec>_<split>.bin" or "<spec>_<split>_*.bin" ("data-cache/fortunes").
  // Throws InputError if nothing matches, with a `teetrain prepare-text` hint.
  static TokenDataset open(const std::string& spec, const std::string& split);

  const std::vector<TokenShard>& shards() const { return shards_; }
  int vocab() const { return vocab_; }  // the shards' vocabulary (GPT-2's if none recorded)
  // SHA-256 (lowercase hex) of the shard files' bytes as read, one after another in the dataset's order:
  // `cat` of the files piped to sha256sum. What ranks training on plain shards agree on
  // (engine/run/input_agreement.h).
  const std::string& sha256() const { return sha256_; }
  uint64_t num_tokens() const;
  std::string describe() const;  // "data-cache/fortunes_train.bin (2.3M tokens, vocab 256)"

 private:
  std::vector<TokenShard> shards_;
  int vocab_ = 0;
  std::string sha256_;
};

// The first global sample index of rank `rank`'s micro-batch `micro_step` at optimizer step
// `step` (see the header comment): step*G + micro_step*B*P + rank*B with G = B*P*accum.
inline uint64_t global_sample_index(uint64_t step, int micro_step, int rank, int B, int world, int accum) {
  const auto b = static_cast<uint64_t>(B);
  const auto p = static_cast<uint64_t>(world);
  return step * b * p * static_cast<uint64_t>(accum) + static_cast<uint64_t>(micro_step) * b * p +
         static_cast<uint64_t>(rank) * b;
}

// Maps global sample indices to windows and fills batches. Keeps a reference to the dataset, which
// must outlive the loader. Not thread-safe (it caches the current epoch's permutation): one loader
// per rank/thread.
class TokenLoader {
 public:
  // Purpose tag for derive_seed, so the data order is independent of other streams drawn from the
  // same --seed (parameter init, dropout, sampling).
  static constexpr uint64_t kDataStream = WindowOrder::kDataStream;  // "data"

  // Throws InputError if T < 1 or the dataset holds no window of T+1 tokens ("too small for --seq").
  TokenLoader(const TokenDataset& data, int T, uint64_t seed, bool shuffle);
  TokenLoader(TokenDataset&&, int, uint64_t, bool) = delete;  // would dangle: the loader keeps a reference

  uint64_t num_windows() const { return num_windows_; }  // W: samples per epoch
  int seq_len() const { return T_; }

  // Window (in [0, W), dataset order) that global sample g reads.
  uint64_t window_of(uint64_t g);

  // Sets out.B = count, out.T = T and fills out.tokens (B, T) and out.targets (B, T) with samples
  // [first_sample, first_sample + count). count >= 0. Reuses out's vectors' capacity.
  void fill(Batch& out, uint64_t first_sample, int count);

 private:
  const uint16_t* window_tokens(uint64_t window) const;  // T+1 tokens

  const TokenDataset& data_;
  int T_;
  uint64_t num_windows_ = 0;
  std::vector<uint64_t> shard_first_window_;  // (num_shards + 1) prefix sums of windows per shard
  WindowOrder order_{0, 0, false};            // set once num_windows_ is known
};

}  // namespace tt
