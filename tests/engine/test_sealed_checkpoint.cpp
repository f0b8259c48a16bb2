// Sealed checkpoints through CheckpointStore + make_sealed_codec: round trip with a real model,
// tampering, wrong key, and a save that fails halfway leaving the last good checkpoint intact.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "base/error.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/keys/key_file.h"
#include "engine/param_chunks.h"
#include "tee/crypto/sealed_file.h"
#include "tee/errors.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using enginetest::TempDir;
using enginetest::TinyRun;

TEST(SealedCheckpoint, RoundTripGivesIdenticalParamsAndOptimizerState) {
  TempDir dir;
  const tee::CheckpointKey key = derive_checkpoint_key(tee::MasterKey::random());
  auto codec = make_sealed_codec(key, tee::Cipher::Aes256Gcm, 4096);  // small chunks: many per file
  TinyRun a(11);
  CheckpointStore store(dir.path(), 2, *codec);
  const fs::path step = store.save(*a.backend, a.model, a.opt.get(), a.meta(5));
  EXPECT_EQ(step.filename(), "step_00000005");
  for (const char* f : {"model.safetensors.sealed", "optimizer.safetensors.sealed", "state.json.sealed",
                        "manifest.json.sealed"}) {
    SCOPED_TRACE(f);
    ASSERT_TRUE(fs::exists(step / f));
    const tee::SealedHeader h = tee::read_sealed_header(step / f);
    EXPECT_EQ(h.key_fingerprint, tee::key_fingerprint(key.view()));
    EXPECT_NE(h.metadata.find("\"kind\""), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(step / "model.safetensors"));

  TinyRun b(99, /*step=*/false);  // different params, zero optimizer state
  ASSERT_NE(a.params(), b.params());
  const CheckpointMeta m = CheckpointStore::load(step, *codec, *b.backend, b.model, b.opt.get());
  EXPECT_EQ(m.step, 5);
  EXPECT_EQ(m.samples_consumed, 80u);
  EXPECT_EQ(a.params(), b.params());
  EXPECT_EQ(a.opt_state(), b.opt_state());
  EXPECT_EQ(m.params_sha256, params_sha256(*b.backend, b.model));
}

TEST(SealedCheckpoint, TamperedFileFailsNamingFileAndChunk) {
  TempDir dir;
  const tee::CheckpointKey key = tee::CheckpointKey::random();
  auto codec = make_sealed_codec(key, tee::Cipher::ChaCha20Poly1305, 4096);
  TinyRun a(3);
  CheckpointStore store(dir.path(), 1, *codec);
  const fs::path step = store.save(*a.backend, a.model, a.opt.get(), a.meta(1));
  const fs::path f = step / "model.safetensors.sealed";
  const tee::SealedHeader h = tee::read_sealed_header(f);
  enginetest::flip_byte(f, h.chunk_offset(2) + 100);
  TinyRun b(4, false);
  try {
    CheckpointStore::load(step, *codec, *b.backend, b.model, b.opt.get());
    FAIL() << "tampered checkpoint loaded";
  } catch (const IntegrityError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.safetensors.sealed"), std::string::npos) << what;
    EXPECT_NE(what.find("chunk 2"), std::string::npos) << what;
  }
}

TEST(SealedCheckpoint, WrongKeyAndMissingFileAreRefused) {
  TempDir dir;
  auto codec = make_sealed_codec(tee::CheckpointKey::random());
  auto other = make_sealed_codec(tee::CheckpointKey::random());
  TinyRun a(3, false);
  CheckpointStore store(dir.path(), 1, *codec);
  const fs::path step = store.save(*a.backend, a.model, nullptr, a.meta(2));
  try {
    CheckpointStore::read_meta(step, *other);
    FAIL();
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("key fingerprint mismatch"), std::string::npos) << e.what();
  }
  // A plain codec (no key) cannot open a sealed checkpoint: it needs the key, an input problem.
  auto plain = make_plain_codec();
  EXPECT_THROW(CheckpointStore::read_meta(step, *plain), InputError);
  EXPECT_THROW(CheckpointStore::load(step, *plain, *a.backend, a.model, nullptr), InputError);
  // A missing step directory is an input problem too, not an integrity failure.
  EXPECT_THROW(CheckpointStore::read_meta(dir / "step_00000099", *codec), InputError);
}

// Wraps a codec and throws when asked to write one kind of file: a crash or a full disk mid-save.
class FailingCodec final : public FileCodec {
 public:
  FailingCodec(FileCodec& inner, std::string fail_kind) : inner_(inner), fail_kind_(std::move(fail_kind)) {}
  std::string suffix() const override { return inner_.suffix(); }
  void write(const fs::path& path, std::span<const std::byte> bytes, const std::string& kind,
             std::optional<long> step) override {
    if (kind == fail_kind_) throw RunError("injected failure writing " + path.string());
    inner_.write(path, bytes, kind, step);
  }
  const tee::CheckpointKey* key() const override { return inner_.key(); }

 private:
  FileCodec& inner_;
  std::string fail_kind_;
};

// Wraps a codec and, for one kind of file, writes all but its last 100 bytes without a word: a short
// write the file system did not report.
class ShortCodec final : public FileCodec {
 public:
  ShortCodec(FileCodec& inner, std::string short_kind) : inner_(inner), short_kind_(std::move(short_kind)) {}
  std::string suffix() const override { return inner_.suffix(); }
  void write(const fs::path& path, std::span<const std::byte> bytes, const std::string& kind,
             std::optional<long> step) override {
    inner_.write(path, bytes, kind, step);
    if (kind == short_kind_) fs::resize_file(path, fs::file_size(path) - 100);
  }
  const tee::CheckpointKey* key() const override { return inner_.key(); }

 private:
  FileCodec& inner_;
  std::string short_kind_;
};

// Note [Checkpoint files read back]: a rank's optimizer shard, or rank 0's model, that reads back other
// than written is refused before it is reported or listed, plain and sealed.
TEST(SealedCheckpoint, ShortWriteIsRefusedBeforeTheManifest) {
  TinyRun a(31);
  auto sealed = make_sealed_codec(tee::CheckpointKey::random(), tee::Cipher::Aes256Gcm, 4096);
  auto plain = make_plain_codec();
  for (FileCodec* inner : {plain.get(), sealed.get()}) {
    SCOPED_TRACE(inner->suffix());
    TempDir dir;
    ShortCodec shard_short(*inner, "optimizer");
    EXPECT_NO_THROW(CheckpointStore::write_optimizer_shard(*inner, dir.path(), *a.backend, *a.opt, 0, 4));
    try {
      CheckpointStore::write_optimizer_shard(shard_short, dir.path(), *a.backend, *a.opt, 1, 4);
      ADD_FAILURE() << "a short shard was reported";
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find("optimizer.rank1.safetensors"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not what was written"), std::string::npos) << e.what();
    }
    ShortCodec model_short(*inner, "model");
    CheckpointStore store(dir.path() / "ck", 1, model_short);
    EXPECT_THROW(store.save(*a.backend, a.model, a.opt.get(), a.meta(4)), RunError);
    EXPECT_TRUE(CheckpointStore::complete_steps(dir.path() / "ck").empty());
  }
}

TEST(SealedCheckpoint, FailedSaveLeavesLastGoodCheckpointIntact) {
  TempDir dir;
  auto codec = make_sealed_codec(tee::CheckpointKey::random(), tee::Cipher::Aes256Gcm, 4096);
  TinyRun a(21);
  {
    CheckpointStore store(dir.path(), 1, *codec);  // keep 1: a successful save would prune step 10
    store.save(*a.backend, a.model, a.opt.get(), a.meta(10));
  }
  const std::vector<float> good = a.params();
  const std::vector<char> good_model =
      enginetest::read_all(dir / "step_00000010" / "model.safetensors.sealed");

  TinyRun changed(22);  // different parameters for the failing save
  FailingCodec failing(*codec, "optimizer");
  CheckpointStore store(dir.path(), 1, failing);
  EXPECT_THROW(store.save(*changed.backend, changed.model, changed.opt.get(), changed.meta(20)), RunError);

  const auto steps = CheckpointStore::complete_steps(dir.path());
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].filename(), "step_00000010");
  EXPECT_EQ(CheckpointStore::resolve(dir.path()), steps[0]);
  EXPECT_EQ(enginetest::read_all(steps[0] / "model.safetensors.sealed"), good_model);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1) << "the failed save left a temporary directory behind";

  TinyRun b(5, false);
  const CheckpointMeta m = CheckpointStore::load(steps[0], *codec, *b.backend, b.model, b.opt.get());
  EXPECT_EQ(m.step, 10);
  EXPECT_EQ(b.params(), good);
}

}  // namespace
}  // namespace tt
