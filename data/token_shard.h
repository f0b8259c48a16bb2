// Token shards in llm.c's on-disk format (docs/design.md §7), so shards prepared for llm.c train here
// unchanged and ours load in llm.c.
//
// Layout (all little-endian):
//   header: 256 x int32 (1024 bytes)
//     [0] magic 20240520
//     [1] version 1 (uint16 tokens; llm.c's version 2 = uint32 Llama-3 tokens is not supported)
//     [2] token count N
//     [3] vocabulary size (teetrain's addition; 0 = not recorded, i.e. an llm.c GPT-2 shard, 50257).
//         llm.c ignores header ints past [2], so the extra field keeps files compatible both ways.
//     [4..255] zero
//   body: N x uint16 tokens
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace tt {
namespace tee {
class Sha256;
}

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderInts = 256;
inline constexpr std::size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);  // 1024
inline constexpr int kGpt2Vocab = 50257;  // what an llm.c shard without a recorded vocabulary holds
inline constexpr int kByteVocab = 256;    // byte-level text

// The four fields an llm.c header sets (little-endian int32s; the rest of its 1024 bytes are zero), as
// a plain shard's file and a sealed shard's plaintext both begin.
struct ShardHeaderFields {
  int32_t magic = 0, version = 0, count = 0, vocab = 0;
};
ShardHeaderFields read_shard_header(std::span<const uint8_t, kShardHeaderBytes> header);

// One shard, read whole into memory (our shards are a few MB; llm.c's are ~200 MB, still fine).
struct TokenShard {
  std::filesystem::path path;
  int recorded_vocab = 0;        // header[3]; 0 = not recorded
  std::vector<uint16_t> tokens;  // (N)

  // The vocabulary the tokens belong to: the recorded one, else GPT-2's (llm.c's default).
  int vocab() const { return recorded_vocab > 0 ? recorded_vocab : kGpt2Vocab; }
};

// Writes `tokens` as a shard at `path`, atomically (temporary file in the same directory, then
// rename), so a reader never sees a half-written shard and re-running overwrites cleanly.
// vocab: recorded in header[3]; 0 writes a plain llm.c header. Every token must be < vocab when
// vocab > 0. Throws InputError on a bad argument, RunError on an I/O failure.
void write_token_shard(const std::filesystem::path& path, std::span<const uint16_t> tokens, int vocab);

// Reads and validates a shard. Throws InputError (one line naming the file, the problem and what to
// do) when the file is missing, is not a shard (wrong magic), has an unsupported version, is
// truncated or has trailing bytes, or holds a token outside its recorded vocabulary. `file_digest`, when
// given, is updated with the file's bytes exactly as read (header, then tokens): what a run trained on.
TokenShard read_token_shard(const std::filesystem::path& path, tee::Sha256* file_digest = nullptr);

}  // namespace tt
