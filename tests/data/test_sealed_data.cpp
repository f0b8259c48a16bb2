// Sealed token shards and sealed ingress: seal-data round trip, identical batches to the plain
// loader (direct and bounce), tampering, wrong key, plain-data refusal, throttle.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/rng.h"
#include "data/sealed_tokens.h"
#include "data/token_loader.h"
#include "tee/errors.h"
#include "tests/common/temp_dir.h"
#include "tests/data/data_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using tt::testing::TempDir;

using datatest::write_random_shard;

struct Fixture {
  TempDir dir;
  tee::DatasetKey key = tee::DatasetKey::random();
  fs::path plain_dir = dir / "plain";
  fs::path sealed_dir = dir / "sealed";
  std::vector<SealedShardInfo> sealed;

  explicit Fixture(std::uint32_t chunk = 100) {
    fs::create_directories(plain_dir);
    write_random_shard(plain_dir / "d_train_000.bin", 700, 1);
    write_random_shard(plain_dir / "d_train_001.bin", 450, 2);
    write_random_shard(plain_dir / "d_val.bin", 300, 3);
    sealed = seal_token_shards(list_token_shards((plain_dir / "d").string()), sealed_dir, key,
                               tee::Cipher::Aes256Gcm, chunk);
  }
};

void expect_same(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.B, b.B);
  EXPECT_EQ(a.T, b.T);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.targets, b.targets);
}

TEST(SealedData, SealWritesOneSealedFilePerShardWithMetadata) {
  Fixture f;
  ASSERT_EQ(f.sealed.size(), 3u);
  EXPECT_EQ(f.sealed[0].output, f.sealed_dir / "d_train_000.bin.sealed");
  EXPECT_EQ(f.sealed[0].tokens, 700u);
  const tee::SealedHeader h = tee::read_sealed_header(f.sealed[0].output);
  EXPECT_NE(h.metadata.find("\"kind\":\"token-shard\""), std::string::npos);
  EXPECT_NE(h.metadata.find("\"name\":\"d_train_000.bin\""), std::string::npos);
  EXPECT_EQ(h.chunk_size, 100u);
  // The plaintext is the unchanged shard file.
  const std::string raw = tt::testing::read_bytes(f.plain_dir / "d_train_000.bin");
  EXPECT_EQ(tee::read_sealed_file(f.sealed[0].output, f.key),
            std::vector<std::uint8_t>(raw.begin(), raw.end()));
}

TEST(SealedData, SealRefusesMalformedShard) {
  TempDir dir;
  tt::testing::write_bytes(dir / "bad_train.bin", "not a shard");
  const auto key = tee::DatasetKey::random();
  EXPECT_THROW(seal_token_shards({dir / "bad_train.bin"}, dir / "out", key, tee::Cipher::Aes256Gcm),
               InputError);
}

// The heart of it: for the same data, T and seed, the sealed loader serves exactly the plain
// loader's batches, in both ingress modes, across epochs and for shuffled and unshuffled streams.
TEST(SealedData, BatchesEqualPlainLoaderDirectAndBounce) {
  Fixture f;
  const TokenDataset plain = TokenDataset::open((f.plain_dir / "d").string(), "train");
  for (const IngressMode mode : {IngressMode::Direct, IngressMode::Bounce}) {
    for (const bool shuffle : {true, false}) {
      SCOPED_TRACE(std::string(ingress_mode_name(mode)) + (shuffle ? " shuffled" : " ordered"));
      Profiler prof;
      SealedTokenDataset sealed =
          SealedTokenDataset::open((f.sealed_dir / "d").string(), "train", f.key, &prof);
      EXPECT_EQ(sealed.num_tokens(), plain.num_tokens());
      EXPECT_EQ(sealed.vocab(), 256);
      IngressOptions opts;
      opts.mode = mode;
      opts.rank = 1;
      TokenLoader ref(plain, 16, 42, shuffle);
      SealedTokenLoader got(sealed, 16, 42, shuffle, opts, &prof);
      ASSERT_EQ(got.num_windows(), ref.num_windows());
      Batch a;
      Batch b;
      int fills = 0;
      for (uint64_t first = 0; first < 3 * ref.num_windows(); first += 5, ++fills) {  // three epochs
        ref.fill(a, first, 5);
        got.fill(b, first, 5);
        expect_same(a, b);
      }
      EXPECT_GT(prof.count(Counter::MessagesOpened), 0);
      if (mode == IngressMode::Bounce) {
        EXPECT_EQ(prof.count(Counter::MessagesSealed), fills);  // one staging seal per batch
        EXPECT_EQ(prof.count(Counter::BytesSealed), int64_t{fills} * 5 * 17 * 2);
      } else {
        EXPECT_EQ(prof.count(Counter::MessagesSealed), 0);
      }
      EXPECT_GT(prof.seconds(Phase::Ingress), 0.0);
    }
  }
}

TEST(SealedData, ZeroCountAndNullProfiler) {
  Fixture f;
  SealedTokenDataset sealed = SealedTokenDataset::open(f.sealed_dir.string(), "val", f.key);
  SealedTokenLoader got(sealed, 8, 1, true, {IngressMode::Bounce, tee::Cipher::ChaCha20Poly1305, 0, 0});
  Batch b;
  got.fill(b, 0, 0);
  EXPECT_EQ(b.B, 0);
  EXPECT_TRUE(b.tokens.empty());
  got.fill(b, 7, 3);
  EXPECT_EQ(b.tokens.size(), 24u);
}

TEST(SealedData, TamperedChunkFailsWhenABatchTouchesIt) {
  Fixture f(256);
  const fs::path file = f.sealed_dir / "d_train_000.bin.sealed";
  // Flip a byte inside chunk 5 (plaintext bytes 1280..1535 = tokens 128..255).
  const tee::SealedHeader h = tee::read_sealed_header(file);
  {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(h.chunk_offset(5) + 3));
    const char c = static_cast<char>(io.get());
    io.seekp(static_cast<std::streamoff>(h.chunk_offset(5) + 3));
    io.put(static_cast<char>(c ^ 0x01));
  }
  // Chunk 0 (the shard header) is intact; the split's other shard comes along (both are needed).
  SealedTokenDataset sealed({file, f.sealed_dir / "d_train_001.bin.sealed"}, "train", f.key);
  SealedTokenLoader loader(sealed, 16, 0, /*shuffle=*/false);
  Batch b;
  loader.fill(b, 0, 1);  // window 0: tokens 0..16, chunk 4 -- fine
  try {
    loader.fill(b, 8, 1);  // window 8: tokens 128..144, chunk 5
    FAIL() << "tampered chunk opened";
  } catch (const IntegrityError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("d_train_000.bin.sealed"), std::string::npos) << what;
    EXPECT_NE(what.find("chunk 5"), std::string::npos) << what;
  }
}

TEST(SealedData, WrongKeyIsAFingerprintMismatch) {
  Fixture f;
  const auto wrong = tee::DatasetKey::random();
  try {
    SealedTokenDataset::open((f.sealed_dir / "d").string(), "train", wrong);
    FAIL() << "opened with the wrong key";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("key fingerprint mismatch"), std::string::npos) << e.what();
  }
}

TEST(SealedData, PlainDataRefusedInTeeModeUnlessAllowed) {
  Fixture f;
  const std::string plain = (f.plain_dir / "d").string();
  try {
    require_sealed_data(plain, "train", false);
    FAIL() << "plain data accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("plain shards refused in TEE mode"), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-plain-data"), std::string::npos) << what;
  }
  EXPECT_FALSE(require_sealed_data(plain, "train", true));
  EXPECT_TRUE(require_sealed_data((f.sealed_dir / "d").string(), "train", false));
  EXPECT_TRUE(require_sealed_data(f.sealed_dir.string(), "val", false));
  EXPECT_TRUE(require_sealed_data((f.sealed_dir / "d_val.bin.sealed").string(), "train", false));
  EXPECT_THROW(require_sealed_data((f.plain_dir / "d_val.bin").string(), "val", false), InputError);
  EXPECT_EQ(find_sealed_shards((f.sealed_dir / "d").string(), "train").size(), 2u);
  EXPECT_THROW(SealedTokenDataset::open(plain, "train", f.key), InputError);
}

TEST(SealedData, BounceBufferTamperingIsCaught) {
  Fixture f;
  SealedTokenDataset sealed = SealedTokenDataset::open((f.sealed_dir / "d").string(), "train", f.key);
  SealedTokenLoader loader(sealed, 16, 3, true, {IngressMode::Bounce, tee::Cipher::Aes256Gcm, 2, 0}, nullptr,
                           std::make_unique<datatest::TamperingBounceBuffer>(1, 1));
  Batch b;
  loader.fill(b, 0, 2);  // message 0 crosses untouched
  try {
    loader.fill(b, 2, 2);
    FAIL() << "tampered bounce buffer opened";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("ingress bounce buffer of rank 2, message 1"), std::string::npos)
        << e.what();
  }
}

TEST(SealedData, ThrottleCapsIngressRate) {
  Fixture f;
  SealedTokenDataset sealed = SealedTokenDataset::open((f.sealed_dir / "d").string(), "train", f.key);
  // 1e-4 GB/s = 100 kB/s; 10 batches of 4 windows x 17 tokens x 2 bytes = 1360 bytes -> >= 13.6 ms.
  SealedTokenLoader loader(sealed, 16, 3, true, {IngressMode::Bounce, tee::Cipher::Aes256Gcm, 0, 1e-4});
  Batch b;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) loader.fill(b, static_cast<uint64_t>(4 * i), 4);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(ms, 13.0);
}

}  // namespace
}  // namespace tt
