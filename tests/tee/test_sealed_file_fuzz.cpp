// Fuzz-style test of the sealed-file parsers (tee/crypto/sealed_file.h): read_sealed_header and
// SealedFileReader on random bytes, every truncation, bit flips and byte overwrites of a valid file.
// Each input is refused with IntegrityError or, for read_sealed_header, may parse; nothing else
// (no crash, hang, sanitizer report or other exception). And since every byte of a sealed file is
// authenticated, no changed byte and no truncation may ever open. Deterministic; a second or two. A
// forged header whose lengths a sparse file matches is refused before anything is allocated.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tee/crypto/sealed_file.h"
#include "tee/errors.h"
#include "tests/common/fuzz.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

using tt::testing::fuzz_inputs;
using tt::testing::FuzzPlan;
using tt::testing::run_parser;

TEST(SealedFileFuzz, HeaderAndReaderRefuseEveryDamagedFile) {
  tt::testing::FuzzDir dir;
  const auto key = DatasetKey::random();
  SealOptions opts;
  opts.chunk_size = 64;
  opts.metadata =
      R"({"kind":"token-shard","name":"x_train.bin","dataset":"00112233445566778899aabbccddeeff"})";
  const std::filesystem::path good = dir / "good.sealed";
  write_sealed_file(good, key, test::pattern(1000), opts);  // 16 chunks
  const std::string valid = tt::testing::read_bytes(good);

  FuzzPlan plan;
  plan.truncate_upto = valid.size();  // every length
  plan.flip_all_bits_upto = 200;      // the fixed header, the metadata and the first chunks
  plan.random_flips = 300;
  plan.random_overwrites = 200;
  plan.random_buffers = 100;
  auto inputs = fuzz_inputs(valid, plan);
  // Appended bytes, and a file that starts like a sealed file but is nothing else.
  inputs.push_back({"one byte appended", valid + "x"});
  inputs.push_back({"magic only", valid.substr(0, 8) + std::string(100, '\0')});
  const std::filesystem::path f = dir / "fuzzed.sealed";
  int header_ok = 0;
  for (const auto& in : inputs) {
    tt::testing::write_bytes(f, in.bytes);
    const int h = run_parser([&] { read_sealed_header(f); }, in.what + " (header)");
    EXPECT_TRUE(h == 0 || h == 3) << in.what;
    header_ok += h == 0;
    const int r = run_parser(
        [&] {
          SealedFileReader reader(f, key);
          reader.read_all();
        },
        in.what);
    EXPECT_EQ(r, 3) << in.what << ": a damaged sealed file opened";
  }
  EXPECT_GT(header_ok, 0);  // damage past the header still parses as a header, then fails to open
  EXPECT_EQ(read_sealed_file(good, key), test::pattern(1000));
}

// A header declaring chunks over the 64 MiB cap: refused from the header alone (what a forged file
// backed by real bytes could otherwise make every reader allocate and decrypt).
TEST(SealedFileFuzz, AChunkOverTheCapIsRefusedFromTheHeader) {
  tt::testing::FuzzDir dir;
  const auto key = DatasetKey::random();
  const std::filesystem::path f = dir / "big-chunks.sealed";
  write_sealed_file(f, key, test::pattern(1000), SealOptions{});
  std::string bytes = tt::testing::read_bytes(f);
  bytes.replace(12, 4, std::string("\x04\x00\x00\x01", 4));  // chunk size 2^26 + 1, big-endian
  tt::testing::write_bytes(f, bytes);
  try {
    (void)read_sealed_header(f);
    ADD_FAILURE() << "a chunk size over the cap was accepted";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid chunk size 67108865 (at most 64 MiB)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      write_sealed_file(
          dir / "w.sealed", key, test::pattern(10),
          SealOptions{.cipher = Cipher::Aes256Gcm, .chunk_size = kMaxSealChunkSize + 1, .metadata = {}}),
      std::invalid_argument);
}

// A forged header declaring 64 MiB chunks and a 64 MiB plaintext, the file extended (sparsely, as
// `truncate -s` does) to the size those imply: refused before a chunk is allocated or read, naming the
// hole, instead of allocating and decrypting a gigabyte of zeros to find the tag wrong.
TEST(SealedFileFuzz, ADeclaredLengthTheDiskDoesNotHoldIsRefusedAtOnce) {
  tt::testing::FuzzDir dir;
  const auto key = DatasetKey::random();
  const std::filesystem::path f = dir / "forged.sealed";
  write_sealed_file(f, key, test::pattern(1000), SealOptions{});
  std::string bytes = tt::testing::read_bytes(f);
  SealedHeader h = read_sealed_header(f);
  h.chunk_size = kMaxSealChunkSize;
  h.plaintext_size = kMaxSealChunkSize;
  const std::vector<std::uint8_t> head = h.encode();
  bytes.replace(0, head.size(), reinterpret_cast<const char*>(head.data()), head.size());
  tt::testing::write_bytes(f, bytes);
  std::filesystem::resize_file(f, h.file_size());
  try {
    SealedFileReader reader(f, key);
    ADD_FAILURE() << "a forged header with a sparse file opened";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("(a hole: the file was extended, not written)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tt::tee
