// Master key files: create (0600, refuse overwrite), load (missing, wrong size, open permissions),
// purpose keys.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "base/error.h"
#include "engine/keys/key_file.h"
#include "tee/bytes.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

using enginetest::TempDir;

TEST(KeyFile, CreateWritesThirtyTwoPrivateBytesAndLoadReadsThem) {
  TempDir dir;
  const auto path = dir / "master.key";
  const std::string fp = create_key_file(path);
  EXPECT_EQ(std::filesystem::file_size(path), 32u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string warning;
  const tee::MasterKey key = load_key_file(path, [&](const std::string& w) { warning = w; });
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.fingerprint(), fp);
  EXPECT_TRUE(warning.empty());
  EXPECT_EQ(std::filesystem::directory_iterator(dir.path())->path(), path);  // no temporary left
}

TEST(KeyFile, RefusesToOverwriteUnlessForced) {
  TempDir dir;
  const auto path = dir / "master.key";
  const std::string fp1 = create_key_file(path);
  try {
    create_key_file(path);
    FAIL() << "overwrote a key";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_key_file(path).fingerprint(), fp1);
  const std::string fp2 = create_key_file(path, /*force=*/true);
  EXPECT_NE(fp1, fp2);
  EXPECT_EQ(load_key_file(path).fingerprint(), fp2);
  EXPECT_THROW(create_key_file(dir / "no_such_dir" / "k"), InputError);
}

TEST(KeyFile, LoadErrorsAreClearInputErrors) {
  TempDir dir;
  try {
    load_key_file(dir / "missing.key");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the key file it was sealed with"), std::string::npos) << e.what();
  }
  enginetest::TempDir other;
  { std::ofstream(dir / "short.key") << "too short"; }
  try {
    load_key_file(dir / "short.key");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exactly 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_key_file(dir.path()), InputError);  // a directory
}

TEST(KeyFile, OpenPermissionsOnlyWarn) {
  TempDir dir;
  const auto path = dir / "master.key";
  create_key_file(path);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  std::string warning;
  const tee::MasterKey key = load_key_file(path, [&](const std::string& w) { warning = w; });
  EXPECT_EQ(key.size(), 32u);
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;
  EXPECT_NE(warning.find("0644"), std::string::npos) << warning;
  EXPECT_EQ(warning.find(tee::to_hex(key.view())), std::string::npos);  // never the key
}

TEST(KeyFile, PurposeKeysAreDistinctAndDeterministic) {
  // Different purposes are different types (tests/tee/test_digest_hkdf.cpp): compare their bytes.
  const tee::MasterKey master = tee::MasterKey::random();
  const tee::DatasetKey d1 = derive_dataset_key(master);
  const tee::DatasetKey d2 = derive_dataset_key(master);
  const tee::CheckpointKey c = derive_checkpoint_key(master);
  EXPECT_EQ(d1.size(), 32u);
  EXPECT_TRUE(d1 == d2);
  EXPECT_FALSE(d1.secret() == c.secret());
  EXPECT_FALSE(d1.secret() == master.secret());
  EXPECT_FALSE(c.secret() == master.secret());
  const tee::FreshnessKey f = tee::derive_freshness_key(master);
  EXPECT_FALSE(f.secret() == c.secret());
  EXPECT_FALSE(f.secret() == d1.secret());
  EXPECT_FALSE(f.secret() == master.secret());
  EXPECT_EQ(tee::derivation_label(tee::KeyPurpose::Freshness), "teetrain freshness");
  EXPECT_THROW(derive_dataset_key(tee::MasterKey{}), InputError);
}

// A missing key advises what fits: keygen only for sealing something new; for sealed data the key
// it was sealed with, and a file one typo away from the name given.
TEST(KeyFile, MissingKeyAdviceFitsTheUse) {
  TempDir dir;
  create_key_file(dir / "owner.key");
  const std::string seal = missing_key_file(dir / "missing.key", KeyUse::SealNew);
  EXPECT_NE(seal.find("create one with `teetrain keygen --out"), std::string::npos) << seal;
  const std::string train = missing_key_file(dir / "ownr.key", KeyUse::TrainSealed);
  EXPECT_NE(train.find("data owner's key file"), std::string::npos) << train;
  EXPECT_NE(train.find("did you mean " + (dir / "owner.key").string()), std::string::npos) << train;
  EXPECT_EQ(train.find("create one with"), std::string::npos) << train;
  const std::string far = missing_key_file(dir / "zzzzzzzz", KeyUse::OpenSealed);
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
}

}  // namespace
}  // namespace tt
