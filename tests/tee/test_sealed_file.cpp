// Sealed files: round trips at chunk boundaries, random-access reads, and every kind of tampering.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tee/crypto/sealed_file.h"
#include "tee/errors.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

constexpr std::uint32_t kChunk = 64;

std::vector<std::uint8_t> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void spit(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

class SealedFileTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  DatasetKey key = DatasetKey::random();
  std::filesystem::path path = dir / "data.sealed";

  SealOptions opts(Cipher c = Cipher::Aes256Gcm) const {
    return SealOptions{c, kChunk, R"({"kind":"test"})"};
  }

  // Expects opening + reading everything to fail with IntegrityError mentioning `needle`.
  void expect_integrity_error(const std::string& needle, const DatasetKey* k = nullptr) {
    try {
      SealedFileReader r(path, k ? *k : key);
      r.verify_all();
      (void)r.read_all();
      ADD_FAILURE() << "expected IntegrityError containing '" << needle << "'";
    } catch (const IntegrityError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_NE(msg.find(path.string()), std::string::npos) << "error must name the file: " << msg;
    }
  }
};

TEST_F(SealedFileTest, RoundTripAtChunkBoundaries) {
  for (Cipher c : {Cipher::Aes256Gcm, Cipher::Aes128Gcm, Cipher::ChaCha20Poly1305}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{kChunk - 1}, std::size_t{kChunk},
                          std::size_t{kChunk + 1}, std::size_t{5 * kChunk}, std::size_t{7 * kChunk + 13}}) {
      SCOPED_TRACE(std::string(cipher_name(c)) + " size " + std::to_string(n));
      const auto data = test::pattern(n);
      write_sealed_file(path, key, data, opts(c));
      const SealedHeader h = read_sealed_header(path);
      EXPECT_EQ(h.plaintext_size, n);
      EXPECT_EQ(h.cipher, c);
      EXPECT_EQ(h.metadata, R"({"kind":"test"})");
      EXPECT_EQ(h.chunk_count(), n == 0 ? 1 : (n + kChunk - 1) / kChunk);
      EXPECT_EQ(std::filesystem::file_size(path), h.file_size());
      EXPECT_EQ(read_sealed_file(path, key), data);
      SealedFileReader r(path, key);
      r.verify_all();
    }
  }
}

TEST_F(SealedFileTest, StreamingWritesInOddPieces) {
  const auto data = test::pattern(1000);
  {
    SealedFileWriter w(path, key, opts());
    std::size_t off = 0, step = 1;
    while (off < data.size()) {
      const std::size_t n = std::min(step, data.size() - off);
      w.write(ByteView(data).subspan(off, n));
      off += n;
      step = step * 3 % 97 + 1;
    }
    EXPECT_FALSE(std::filesystem::exists(path)) << "nothing at the final path before finish()";
    w.finish();
  }
  EXPECT_EQ(read_sealed_file(path, key), data);
  // No temporary files left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST_F(SealedFileTest, AbandonedWriterLeavesOldFileAndNoTemp) {
  const auto old_data = test::pattern(100);
  write_sealed_file(path, key, old_data, opts());
  {
    SealedFileWriter w(path, key, opts());
    w.write(test::pattern(500, 9));
  }  // destroyed without finish()
  EXPECT_EQ(read_sealed_file(path, key), old_data);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST_F(SealedFileTest, RandomAccessReads) {
  const auto data = test::pattern(10 * kChunk + 7);
  write_sealed_file(path, key, data, opts());
  SealedFileReader r(path, key);
  for (std::uint64_t off : {0u, 1u, 63u, 64u, 65u, 200u, 639u, 640u}) {
    for (std::size_t len : {0u, 1u, 63u, 64u, 65u, 130u}) {
      if (off + len > data.size()) continue;
      std::vector<std::uint8_t> out(len);
      r.read(off, out);
      EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin() + static_cast<std::ptrdiff_t>(off)))
          << off << "+" << len;
    }
  }
  std::vector<std::uint8_t> one(1);
  EXPECT_THROW(r.read(data.size(), one), std::out_of_range);
  std::vector<std::uint8_t> chunk(kChunk);
  EXPECT_EQ(r.read_chunk(10, chunk), 7u);
  EXPECT_TRUE(std::equal(chunk.begin(), chunk.begin() + 7, data.end() - 7));
}

TEST_F(SealedFileTest, HeaderReadableWithoutKeyAndNeverHoldsIt) {
  write_sealed_file(path, key, test::pattern(300), opts());
  const SealedHeader h = read_sealed_header(path);
  EXPECT_EQ(to_hex(h.key_fingerprint), key.fingerprint());
  const auto file = slurp(path);
  const auto k = key.view();
  EXPECT_EQ(std::search(file.begin(), file.end(), k.begin(), k.end()), file.end());
}

TEST_F(SealedFileTest, WrongKeyIsReportedAsFingerprintMismatch) {
  write_sealed_file(path, key, test::pattern(300), opts());
  const DatasetKey other = DatasetKey::random();
  expect_integrity_error("key fingerprint mismatch", &other);
}

TEST_F(SealedFileTest, FlipAnyHeaderByteFails) {
  write_sealed_file(path, key, test::pattern(3 * kChunk + 5), opts());
  const auto good = slurp(path);
  const std::size_t header_size = read_sealed_header(path).header_size();
  for (std::size_t i = 0; i < header_size; ++i) {
    SCOPED_TRACE("header byte " + std::to_string(i));
    for (std::uint8_t bit : {std::uint8_t{0x01}, std::uint8_t{0x80}}) {
      auto bad = good;
      bad[i] ^= bit;
      spit(path, bad);
      expect_integrity_error("");
    }
  }
}

TEST_F(SealedFileTest, FlipAnyBodyByteNamesTheChunk) {
  const auto data = test::pattern(3 * kChunk + 5);
  write_sealed_file(path, key, data, opts());
  const auto good = slurp(path);
  const SealedHeader h = read_sealed_header(path);
  for (std::size_t i = h.header_size(); i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0x04;
    spit(path, bad);
    const std::uint64_t chunk = (i - h.header_size()) / (kChunk + kTagSize);
    expect_integrity_error("chunk " + std::to_string(chunk) + " of 4");
  }
}

TEST_F(SealedFileTest, TruncationAtAnyLengthFails) {
  write_sealed_file(path, key, test::pattern(3 * kChunk + 5), opts());
  const auto good = slurp(path);
  for (std::size_t n = 0; n < good.size(); ++n) {
    spit(path, std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
    expect_integrity_error("");
  }
}

TEST_F(SealedFileTest, DroppedLastChunkWithEditedLengthFails) {
  // The attacker drops the final chunk and rewrites the length so the size check passes: the new
  // last chunk was sealed as "not last", so it fails to open.
  write_sealed_file(path, key, test::pattern(3 * kChunk), opts());
  auto bytes = slurp(path);
  bytes.erase(bytes.end() - static_cast<std::ptrdiff_t>(kChunk + kTagSize), bytes.end());
  store_be64(bytes.data() + 16, 2 * kChunk);
  spit(path, bytes);
  expect_integrity_error("chunk 1 of 2");
}

TEST_F(SealedFileTest, EditedLengthIsRefusedBeforeAnySizeIsTrusted) {
  // The same cut, seen by a reader that opens only chunk 0 before it compares sizes (a sealed token
  // shard's header): chunk 0 opens, size() says 2 chunks, and only authenticated_size() -- which
  // opens the last chunk -- shows the length field is not the sealer's.
  write_sealed_file(path, key, test::pattern(3 * kChunk), opts());
  auto bytes = slurp(path);
  bytes.erase(bytes.end() - static_cast<std::ptrdiff_t>(kChunk + kTagSize), bytes.end());
  store_be64(bytes.data() + 16, 2 * kChunk);
  spit(path, bytes);
  SealedFileReader r(path, key);
  std::vector<std::uint8_t> first(kChunk);
  EXPECT_EQ(r.read_chunk(0, first), kChunk);
  EXPECT_EQ(r.size(), 2 * kChunk);  // unauthenticated
  EXPECT_THROW((void)r.authenticated_size(), IntegrityError);

  write_sealed_file(path, key, test::pattern(3 * kChunk + 5), opts());
  SealedFileReader genuine(path, key);
  EXPECT_EQ(genuine.authenticated_size(), 3 * kChunk + 5);
  EXPECT_EQ(genuine.authenticated_size(), 3 * kChunk + 5);  // opened once, then remembered
}

TEST_F(SealedFileTest, SwappedChunksFail) {
  write_sealed_file(path, key, test::pattern(4 * kChunk), opts());
  auto bytes = slurp(path);
  const SealedHeader h = read_sealed_header(path);
  const auto rec = static_cast<std::ptrdiff_t>(kChunk + kTagSize);
  const auto c1 = bytes.begin() + static_cast<std::ptrdiff_t>(h.chunk_offset(1));
  std::swap_ranges(c1, c1 + rec, c1 + rec);
  spit(path, bytes);
  expect_integrity_error("chunk 1 of 4");
}

TEST_F(SealedFileTest, AppendedGarbageFails) {
  write_sealed_file(path, key, test::pattern(2 * kChunk), opts());
  auto bytes = slurp(path);
  for (std::size_t extra : {1u, 16u, 80u}) {
    auto longer = bytes;
    longer.insert(longer.end(), extra, std::uint8_t{0x42});
    spit(path, longer);
    expect_integrity_error("does not match the header");
  }
  // Appending a whole chunk and bumping the length: the old last chunk is no longer last.
  auto longer = bytes;
  longer.insert(longer.end(), kChunk + kTagSize, std::uint8_t{0x42});
  store_be64(longer.data() + 16, 3 * kChunk);
  spit(path, longer);
  expect_integrity_error("chunk 1 of 3");
}

TEST_F(SealedFileTest, ChunkFromAnotherFileUnderTheSameKeyFails) {
  const auto other_path = dir / "other.sealed";
  write_sealed_file(path, key, test::pattern(2 * kChunk), opts());
  write_sealed_file(other_path, key, test::pattern(2 * kChunk), opts());
  auto a = slurp(path);
  const auto b = slurp(other_path);
  const auto off = static_cast<std::ptrdiff_t>(read_sealed_header(path).chunk_offset(0));
  std::copy(b.begin() + off, b.begin() + off + kChunk + kTagSize, a.begin() + off);
  spit(path, a);
  expect_integrity_error("chunk 0 of 2");
}

TEST_F(SealedFileTest, SameDataSealsDifferentlyEachTime) {
  const auto data = test::pattern(200);
  const auto other_path = dir / "other.sealed";
  write_sealed_file(path, key, data, opts());
  write_sealed_file(other_path, key, data, opts());
  EXPECT_NE(slurp(path), slurp(other_path));  // fresh file nonce -> fresh file key
}

TEST_F(SealedFileTest, NotASealedFile) {
  spit(path, test::pattern(100));
  EXPECT_THROW(read_sealed_header(path), IntegrityError);
  expect_integrity_error("not a teetrain sealed file");
  EXPECT_THROW(read_sealed_header(dir / "missing"), std::runtime_error);
}

TEST_F(SealedFileTest, BadOptionsRejected) {
  EXPECT_THROW(SealedFileWriter(path, key, SealOptions{Cipher::Aes256Gcm, 0, ""}), std::invalid_argument);
  EXPECT_THROW(SealedFileWriter(path, DatasetKey::random(8), opts()), std::invalid_argument);
}

}  // namespace
}  // namespace tt::tee
