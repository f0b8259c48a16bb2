// llm.c-compatible token shards: round trip, hand-written llm.c layout, and every rejection.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/token_shard.h"
#include "tests/common/temp_dir.h"

namespace tt {
namespace {

using tt::testing::read_bytes;
using tt::testing::TempDir;
using tt::testing::write_bytes;

// The header llm.c writes, as bytes: 256 little-endian int32 with `fields` first, then uint16 tokens.
std::string llmc_file(const std::vector<int32_t>& fields, const std::vector<uint16_t>& tokens) {
  std::string bytes(1024, '\0');
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto u = static_cast<uint32_t>(fields[i]);
    for (int k = 0; k < 4; ++k)
      bytes[4 * i + static_cast<std::size_t>(k)] = static_cast<char>((u >> (8 * k)) & 0xFF);
  }
  for (const uint16_t t : tokens) {
    bytes.push_back(static_cast<char>(t & 0xFF));
    bytes.push_back(static_cast<char>(t >> 8));
  }
  return bytes;
}

// Expects an InputError whose one-line message contains every one of `parts`.
template <typename Fn>
void expect_input_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(TokenShard, RoundTripByteVocab) {
  TempDir dir;
  std::vector<uint16_t> tokens;
  for (int i = 0; i < 1000; ++i) tokens.push_back(static_cast<uint16_t>((i * 37) % 256));
  const auto path = dir / "x.bin";
  write_token_shard(path, tokens, kByteVocab);
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 2 * tokens.size());
  const TokenShard s = read_token_shard(path);
  EXPECT_EQ(s.tokens, tokens);
  EXPECT_EQ(s.recorded_vocab, 256);
  EXPECT_EQ(s.vocab(), 256);
  EXPECT_EQ(s.path, path);
}

TEST(TokenShard, WriterProducesLlmcLayout) {
  TempDir dir;
  const std::vector<uint16_t> tokens = {50256, 1, 0x1234};
  write_token_shard(dir / "x.bin", tokens, 0);
  // vocab 0 writes exactly what llm.c's dev/data scripts write.
  EXPECT_EQ(read_bytes(dir / "x.bin"), llmc_file({20240520, 1, 3}, tokens));
  write_token_shard(dir / "y.bin", tokens, 50257);
  EXPECT_EQ(read_bytes(dir / "y.bin"), llmc_file({20240520, 1, 3, 50257}, tokens));
  // Overwriting works and leaves no temporary files behind.
  write_token_shard(dir / "x.bin", std::vector<uint16_t>{7}, 0);
  EXPECT_EQ(read_token_shard(dir / "x.bin").tokens, std::vector<uint16_t>{7});
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2);
}

TEST(TokenShard, ReadsHandWrittenLlmcFile) {
  TempDir dir;
  const std::vector<uint16_t> tokens = {50256, 15496, 11, 995, 0, 65535};
  write_bytes(dir / "tiny_shakespeare_val.bin", llmc_file({20240520, 1, 6}, tokens));
  const TokenShard s = read_token_shard(dir / "tiny_shakespeare_val.bin");
  EXPECT_EQ(s.tokens, tokens);
  EXPECT_EQ(s.recorded_vocab, 0);
  EXPECT_EQ(s.vocab(), kGpt2Vocab);  // not recorded: llm.c's GPT-2 assumed, tokens not range-checked
}

TEST(TokenShard, EmptyShardIsValid) {
  TempDir dir;
  write_token_shard(dir / "e.bin", {}, kByteVocab);
  EXPECT_TRUE(read_token_shard(dir / "e.bin").tokens.empty());
}

TEST(TokenShard, MissingFile) {
  TempDir dir;
  const auto path = (dir / "nope_train.bin").string();
  expect_input_error([&] { read_token_shard(path); }, {path, "not found", "teetrain prepare-text"});
}

TEST(TokenShard, WrongMagic) {
  TempDir dir;
  const auto path = dir / "bad.bin";
  write_bytes(path, llmc_file({20240521, 1, 2}, {1, 2}));
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "magic", "20240520"});
  write_bytes(path, "hello, this is text, not tokens\n");  // shorter than a header
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "truncated"});
}

TEST(TokenShard, UnsupportedVersion) {
  TempDir dir;
  const auto path = dir / "llama.bin";
  write_bytes(path, llmc_file({20240520, 2, 2}, {1, 2, 3, 4}));  // llm.c v2: uint32 tokens
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "unsupported version 2"});
}

TEST(TokenShard, Truncated) {
  TempDir dir;
  const auto path = dir / "cut.bin";
  std::string bytes = llmc_file({20240520, 1, 4}, {1, 2, 3, 4});
  bytes.pop_back();
  write_bytes(path, bytes);
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "truncated", "4 tokens"});
}

TEST(TokenShard, TrailingBytes) {
  TempDir dir;
  const auto path = dir / "long.bin";
  write_bytes(path, llmc_file({20240520, 1, 1}, {1, 2}));
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "2 bytes past"});
}

TEST(TokenShard, TokenOutsideRecordedVocab) {
  TempDir dir;
  const auto path = dir / "v.bin";
  write_bytes(path, llmc_file({20240520, 1, 3, 256}, {65, 300, 66}));
  expect_input_error([&] { read_token_shard(path); }, {path.string(), "token 300", "position 1", "256"});
}

TEST(TokenShard, WriterRejectsBadInput) {
  TempDir dir;
  const std::vector<uint16_t> tokens = {1, 256};
  expect_input_error([&] { write_token_shard(dir / "w.bin", tokens, 256); },
                     {"token 256", "vocabulary of 256"});
  expect_input_error([&] { write_token_shard(dir / "w.bin", tokens, 70000); }, {"70000"});
  EXPECT_FALSE(std::filesystem::exists(dir / "w.bin"));
}

}  // namespace
}  // namespace tt
