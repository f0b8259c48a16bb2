// Sealed datasets bound to what they are (data/dataset_binding.h): the manifest and binding format,
// and the refusals an adversary with write access to the sealed files runs into: a renamed split, a
// missing, duplicated or foreign shard, a foreign or missing validation split, swapped image splits,
// files without a binding (older teetrain) -- and that renaming shards within a split is harmless.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/rng.h"
#include "data/dataset_binding.h"
#include "data/sealed_images.h"
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

template <typename E, typename F>
void expect_throw_naming(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

// Three training shards and one validation shard, sealed twice under the same key: `sealed` and
// `other` are two datasets holding the very same bytes.
struct TokenFixture {
  TempDir dir;
  tee::DatasetKey key = tee::DatasetKey::random();
  fs::path plain = dir / "plain";
  fs::path sealed = dir / "sealed";
  fs::path other = dir / "other";
  std::vector<SealedShardInfo> infos;

  TokenFixture() {
    fs::create_directories(plain);
    write_random_shard(plain / "d_train_000.bin", 300, 1);
    write_random_shard(plain / "d_train_001.bin", 200, 2);
    write_random_shard(plain / "d_train_002.bin", 250, 3);
    write_random_shard(plain / "d_val.bin", 120, 4);
    const auto inputs = list_token_shards((plain / "d").string());
    infos = seal_token_shards(inputs, sealed, key, tee::Cipher::Aes256Gcm, 128);
    seal_token_shards(inputs, other, key, tee::Cipher::Aes256Gcm, 128);
  }
  std::string prefix() const { return (sealed / "d").string(); }
  fs::path file(const std::string& name) const { return sealed / (name + ".bin.sealed"); }
  SealedTokenDataset train() const { return SealedTokenDataset::open(prefix(), "train", key); }
};

TEST(DatasetBinding, ManifestIsCanonicalAndBindsEveryFile) {
  DatasetManifest m("token-shard", std::string(32, 'a'));
  tee::Sha256Digest d1{}, d2{};
  d1[0] = 1;
  d2[31] = 2;
  EXPECT_EQ(m.add("val", 10, d2), 0u);
  EXPECT_EQ(m.add("train", 20, d1), 0u);
  EXPECT_EQ(m.add("train", 30, d2), 1u);
  const std::string h1 = "01" + std::string(62, '0'), h2 = std::string(62, '0') + "02";
  EXPECT_EQ(m.canonical(), "teetrain sealed-dataset manifest v1\nkind token-shard\ndataset " +
                               std::string(32, 'a') + "\nfile train 0 2 20 " + h1 + "\nfile train 1 2 30 " +
                               h2 + "\nfile val 0 1 10 " + h2 + "\n");
  EXPECT_EQ(m.digest_hex(), tee::to_hex(tee::sha256(m.canonical())));
  const DatasetBinding b = m.binding("train", 1);
  EXPECT_EQ(b.dataset, std::string(32, 'a'));
  EXPECT_EQ(b.shard, 1u);
  EXPECT_EQ(b.shards, 2u);
  EXPECT_EQ(b.splits, (std::map<std::string, std::uint64_t>{{"train", 2}, {"val", 1}}));
  EXPECT_EQ(b.manifest, m.digest_hex());
  // Round trip through metadata.
  nlohmann::ordered_json meta{{"kind", "token-shard"}};
  b.add_to(meta);
  const DatasetBinding r = read_binding(nlohmann::json::parse(meta.dump()), "f");
  EXPECT_EQ(r.dataset, b.dataset);
  EXPECT_EQ(r.split, "train");
  EXPECT_EQ(r.shard, 1u);
  EXPECT_EQ(r.shards, 2u);
  EXPECT_EQ(r.splits, b.splits);
  EXPECT_EQ(r.manifest, b.manifest);
  EXPECT_THROW(m.add("no spaces", 1, d1), InputError);
  EXPECT_NE(new_dataset_id(), new_dataset_id());
  EXPECT_EQ(new_dataset_id().size(), 32u);
}

TEST(DatasetBinding, MalformedOrMissingBindingIsAnIntegrityError) {
  DatasetManifest m("image-set", new_dataset_id());
  m.add("train", 1, {});
  nlohmann::ordered_json good{{"kind", "image-set"}};
  m.binding("train", 0).add_to(good);
  const nlohmann::json base = nlohmann::json::parse(good.dump());
  expect_throw_naming<IntegrityError>(
      [] {
        read_binding(nlohmann::json{{"kind", "token-shard"}}, "old.sealed");
      },
      {"old.sealed", "no dataset binding", "teetrain seal-data"});
  expect_throw_naming<IntegrityError>([] { read_binding(nlohmann::json::array(), "x.sealed"); },
                                      {"x.sealed"});
  const std::vector<std::pair<std::string, nlohmann::json>> mangled = {{"dataset", 5},
                                                                       {"dataset", "ABCDEF"},
                                                                       {"split", ""},
                                                                       {"split", "a b"},
                                                                       {"shard", -1},
                                                                       {"shard", 1},
                                                                       {"shard", 0.5},
                                                                       {"shards", 0},
                                                                       {"shards", "1"},
                                                                       {"splits", {1, 2}},
                                                                       {"splits", {{"train", 2}}},
                                                                       {"splits", {{"Tr ain", 1}}},
                                                                       {"splits", {{"train", -1}}},
                                                                       {"manifest", nullptr},
                                                                       {"manifest", std::string(64, 'g')}};
  for (const auto& [key, value] : mangled) {
    nlohmann::json j = base;
    j[key] = value;
    SCOPED_TRACE(j.dump());
    expect_throw_naming<IntegrityError>([&] { read_binding(j, "f.sealed"); }, {"f.sealed", key});
  }
  for (const char* key : {"split", "shard", "shards", "splits", "manifest"}) {
    nlohmann::json j = base;
    j.erase(key);
    expect_throw_naming<IntegrityError>([&] { read_binding(j, "f.sealed"); }, {key});
  }
}

TEST(DatasetBinding, SealedShardsCarryTheirBinding) {
  TokenFixture f;
  ASSERT_EQ(f.infos.size(), 4u);
  const std::string id = f.infos[0].binding.dataset;
  for (const auto& i : f.infos) {
    EXPECT_EQ(i.binding.dataset, id);
    EXPECT_EQ(i.binding.manifest, f.infos[0].binding.manifest);
  }
  EXPECT_EQ(f.infos[2].binding.split, "train");
  EXPECT_EQ(f.infos[2].binding.shard, 2u);
  EXPECT_EQ(f.infos[3].binding.split, "val");
  const std::string meta = tee::read_sealed_header(f.file("d_train_001")).metadata;
  EXPECT_NE(meta.find("\"dataset\":\"" + id +
                      "\",\"split\":\"train\",\"shard\":1,\"shards\":3,"
                      "\"splits\":{\"train\":3,\"val\":1},\"manifest\":\""),
            std::string::npos)
      << meta;
  // Another seal-data run of the same bytes is another dataset (with the same manifest entries).
  const std::string other = tee::read_sealed_header(f.other / "d_train_001.bin.sealed").metadata;
  EXPECT_EQ(other.find(id), std::string::npos);
  const SealedTokenDataset d = f.train();
  EXPECT_EQ(d.num_shards(), 3u);
  EXPECT_EQ(d.binding().dataset, id);
  EXPECT_EQ(token_shard_name("x/fineweb_train_000001.bin").prefix, "fineweb");
  EXPECT_EQ(token_shard_name("tiny_val.bin").split, "val");
}

TEST(DatasetBinding, SealRefusesUnsplitNamesAndSeveralDatasets) {
  TempDir dir;
  const auto key = tee::DatasetKey::random();
  write_random_shard(dir / "shakespeare.bin", 50, 1);
  expect_throw_naming<InputError>(
      [&] { seal_token_shards({dir / "shakespeare.bin"}, dir / "o", key, tee::Cipher::Aes256Gcm); },
      {"shakespeare.bin", "split"});
  write_random_shard(dir / "a_train.bin", 50, 1);
  write_random_shard(dir / "b_train.bin", 50, 2);
  expect_throw_naming<InputError>(
      [&] {
        seal_token_shards({dir / "a_train.bin", dir / "b_train.bin"}, dir / "o", key, tee::Cipher::Aes256Gcm);
      },
      {"several datasets", "'a'", "'b'"});
  EXPECT_FALSE(fs::exists(dir / "o" / "a_train.bin.sealed"));  // refused before anything is written
}

TEST(DatasetBinding, ValRenamedToTrainIsRefused) {
  for (const char* victim : {"d_train_000", "d_train_001"}) {  // one fixture at a time: they share a TempDir
    TokenFixture g;
    fs::rename(g.file("d_val"), g.file(victim));
    expect_throw_naming<IntegrityError>([&] { g.train(); },
                                        {victim, "holds the val split but is loaded as train"});
  }
  // The whole training split replaced by the validation file under the exact train name.
  TokenFixture f;
  for (const char* n : {"d_train_000", "d_train_001", "d_train_002"}) fs::remove(f.file(n));
  fs::rename(f.file("d_val"), f.file("d_train"));
  expect_throw_naming<IntegrityError>([&] { f.train(); }, {"d_train.bin.sealed", "val split"});
}

TEST(DatasetBinding, MissingDuplicatedAndForeignShardsAreRefused) {
  {
    TokenFixture f;
    fs::remove(f.file("d_train_001"));
    expect_throw_naming<IntegrityError>([&] { f.train(); },
                                        {"shard 1 of 3 (dataset", "is missing", "d_train_000"});
  }
  {
    TokenFixture f;
    fs::copy_file(f.file("d_train_000"), f.file("d_train_003"));
    expect_throw_naming<IntegrityError>(
        [&] { f.train(); }, {"d_train_003.bin.sealed", "train shard 0 of 3 again", "d_train_000"});
  }
  {
    TokenFixture f;  // a copy replacing another shard: a duplicate and a missing shard at once
    fs::copy_file(f.file("d_train_000"), f.file("d_train_002"), fs::copy_options::overwrite_existing);
    expect_throw_naming<IntegrityError>([&] { f.train(); }, {"d_train_002.bin.sealed", "again"});
  }
  {
    TokenFixture f;  // the same bytes, sealed by another seal-data run under the same key
    fs::copy_file(f.other / "d_train_001.bin.sealed", f.file("d_train_001"),
                  fs::copy_options::overwrite_existing);
    expect_throw_naming<IntegrityError>(
        [&] { f.train(); }, {"d_train_001.bin.sealed", "another sealed dataset", "seal-data` run"});
  }
}

TEST(DatasetBinding, RenamingShardsWithinASplitDoesNotReorderTheData) {
  TokenFixture f;
  const TokenDataset plain = TokenDataset::open((f.plain / "d").string(), "train");
  fs::rename(f.file("d_train_000"), f.dir / "tmp");
  fs::rename(f.file("d_train_002"), f.file("d_train_000"));
  fs::rename(f.dir / "tmp", f.file("d_train_002"));
  SealedTokenDataset sealed = f.train();
  EXPECT_EQ(sealed.shard_file(0), f.file("d_train_002"));  // shard 0 now lives under the name ..._002
  TokenLoader ref(plain, 8, 3, true);
  SealedTokenLoader got(sealed, 8, 3, true);
  Batch a, b;
  for (uint64_t first = 0; first < ref.num_windows(); first += 7) {
    ref.fill(a, first, 7);
    got.fill(b, first, 7);
    EXPECT_EQ(a.tokens, b.tokens);
  }
}

TEST(DatasetBinding, ValidationSplitMustBeOfTheSameDatasetAndPresent) {
  {
    TokenFixture f;
    const SealedTokenDataset train = f.train();
    const auto val = SealedTokenDataset::open_other_split(f.prefix(), "val", train, f.key);
    ASSERT_NE(val, nullptr);
    EXPECT_EQ(val->num_shards(), 1u);
    // A single file names shards, not a split: no separate validation split.
    const SealedTokenDataset one = SealedTokenDataset::open(f.file("d_val").string(), "val", f.key);
    EXPECT_EQ(SealedTokenDataset::open_other_split(f.file("d_val").string(), "val", one, f.key), nullptr);
    fs::copy_file(f.other / "d_val.bin.sealed", f.file("d_val"), fs::copy_options::overwrite_existing);
    expect_throw_naming<IntegrityError>(
        [&] { SealedTokenDataset::open_other_split(f.prefix(), "val", train, f.key); },
        {"d_val.bin.sealed", "another sealed dataset"});
    fs::remove(f.file("d_val"));
    expect_throw_naming<IntegrityError>(
        [&] { SealedTokenDataset::open_other_split(f.prefix(), "val", train, f.key); },
        {"1 val shard(s)", "none was found", "seal-data"});
  }
  TempDir dir;  // a dataset sealed without a validation split has none to miss
  const auto key = tee::DatasetKey::random();
  write_random_shard(dir / "t_train.bin", 64, 1);
  seal_token_shards({dir / "t_train.bin"}, dir / "s", key, tee::Cipher::Aes256Gcm);
  const SealedTokenDataset train = SealedTokenDataset::open((dir / "s" / "t").string(), "train", key);
  EXPECT_EQ(SealedTokenDataset::open_other_split((dir / "s" / "t").string(), "val", train, key), nullptr);
}

TEST(DatasetBinding, FilesWithoutBindingAreRefusedWithAPointerToSealData) {
  TokenFixture f;
  // What the previous teetrain wrote: a valid shard under the right key, metadata without a binding.
  const std::string raw = tt::testing::read_bytes(f.plain / "d_train_000.bin");
  tee::SealOptions opts;
  opts.metadata = R"({"kind":"token-shard","name":"d_train_000.bin","tokens":300,"vocab":256})";
  tee::write_sealed_file(f.dir / "old_train.bin.sealed", f.key,
                         std::vector<std::uint8_t>(raw.begin(), raw.end()), opts);
  expect_throw_naming<IntegrityError>(
      [&] { SealedTokenDataset::open((f.dir / "old").string(), "train", f.key); },
      {"old_train.bin.sealed", "no dataset binding", "re-run `teetrain seal-data`"});
}

TEST(DatasetBinding, BindingIsCheckedOnlyOnceAuthenticated) {
  TokenFixture f;
  // Rewrite the clear binding of the validation shard to claim "train shard 0": the header digest
  // no longer matches, so the file fails to open before its (forged) binding is ever read (at its
  // last chunk, which the reader opens first: it alone authenticates the length field).
  const fs::path v = f.file("d_val");
  std::string bytes = tt::testing::read_bytes(v);
  const std::size_t at = bytes.find("\"split\":\"val\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 13, "\"split\":\"trn\"");
  tt::testing::write_bytes(v, bytes);
  expect_throw_naming<IntegrityError>([&] { SealedTokenDataset({v}, "trn", f.key); },
                                      {"d_val.bin.sealed", "chunk", "failed to open"});
}

// ---- images ----

ImageSet synthetic(int n, uint64_t seed) {
  ImageSet s;
  s.source = "synthetic " + std::to_string(seed);
  s.C = 1;
  s.H = s.W = 4;
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    s.labels.push_back(static_cast<int32_t>(rng.below(10)));
    for (int k = 0; k < 16; ++k) s.pixels.push_back(static_cast<uint8_t>(rng.below(256)));
  }
  return s;
}

struct ImageFixture {
  TempDir dir;
  tee::DatasetKey key = tee::DatasetKey::random();
  ImageSet train = synthetic(30, 1), test = synthetic(9, 2);
  fs::path train_file = sealed_images_path(dir / "s", "syn", "train");
  fs::path test_file = sealed_images_path(dir / "s", "syn", "test");
  SealedImageDataset sealed =
      seal_image_dataset(train, test, dir / "s", "syn", key, tee::Cipher::Aes256Gcm, 64);
  SealedImageDataset other =
      seal_image_dataset(train, test, dir / "o", "syn", key, tee::Cipher::Aes256Gcm, 64);
};

TEST(DatasetBinding, ImageSplitsAreBoundTogether) {
  ImageFixture f;
  EXPECT_EQ(f.sealed.binding.splits, (std::map<std::string, std::uint64_t>{{"test", 1}, {"train", 1}}));
  EXPECT_NE(f.sealed.binding.dataset, f.other.binding.dataset);
  SealedImageSet tr(f.train_file, "train", f.key);
  SealedImageSet te(f.test_file, "test", f.key);
  EXPECT_EQ(tr.binding().dataset, f.sealed.binding.dataset);
  EXPECT_EQ(te.binding().split, "test");
  check_same_dataset({f.train_file, tr.binding()}, {f.test_file, te.binding()});
  // The test split of another seal-data run of the very same images is refused.
  SealedImageSet foreign(sealed_images_path(f.dir / "o", "syn", "test"), "test", f.key);
  expect_throw_naming<IntegrityError>(
      [&] {
        check_same_dataset({f.train_file, tr.binding()}, {foreign.info().file, foreign.binding()});
      },
      {"o/syn_test.images.sealed", "another sealed dataset"});
}

TEST(DatasetBinding, SwappedImageSplitsAreRefused) {
  ImageFixture f;
  fs::rename(f.train_file, f.dir / "tmp");
  fs::rename(f.test_file, f.train_file);
  fs::rename(f.dir / "tmp", f.test_file);
  expect_throw_naming<IntegrityError>(
      [&] { SealedImageSet s(f.train_file, "train", f.key); },
      {"syn_train.images.sealed", "holds the test split but is loaded as train"});
  expect_throw_naming<IntegrityError>([&] { SealedImageSet s(f.test_file, "test", f.key); },
                                      {"syn_test.images.sealed", "holds the train split"});
}

TEST(DatasetBinding, ImageFileWithoutBindingIsRefused) {
  ImageFixture f;
  nlohmann::json meta = nlohmann::json::parse(tee::read_sealed_header(f.train_file).metadata);
  for (const char* k : {"dataset", "shard", "shards", "splits", "manifest"}) meta.erase(k);
  tee::SealOptions opts;
  opts.metadata = meta.dump();
  const fs::path old = f.dir / "old_train.images.sealed";
  tee::write_sealed_file(old, f.key, tee::read_sealed_file(f.train_file, f.key), opts);
  EXPECT_EQ(read_sealed_image_info(old).images, 30u);  // the clear view still reads...
  expect_throw_naming<IntegrityError>([&] { SealedImageSet s(old, "train", f.key); },
                                      {"old_train.images.sealed", "no dataset binding", "seal-data"});
}

}  // namespace
}  // namespace tt
