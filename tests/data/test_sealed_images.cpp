// Sealed image sets: seal round trip and metadata, identical batches to ImageLoader (direct and bounce
// ingress, shuffled or not, augmented or not), tampering, truncation, wrong key, wrong kind, bounce
// staging tampering, finding the files.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/rng.h"
#include "data/image_dataset.h"
#include "data/sealed_images.h"
#include "tee/errors.h"
#include "tests/common/temp_dir.h"
#include "tests/data/data_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using tt::testing::TempDir;

// Random pixels and labels, so a wrong image or label shows.
ImageSet synthetic(int n, int C, int H, int W, uint64_t seed) {
  ImageSet s;
  s.source = "synthetic " + std::to_string(seed);
  s.C = C;
  s.H = H;
  s.W = W;
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    s.labels.push_back(static_cast<int32_t>(rng.below(10)));
    for (int k = 0; k < C * H * W; ++k) s.pixels.push_back(static_cast<uint8_t>(rng.below(256)));
  }
  return s;
}

// 3x6x6 images: 109-byte records in 256-byte chunks, so records straddle chunk boundaries.
struct Fixture {
  TempDir dir;
  tee::DatasetKey key = tee::DatasetKey::random();
  ImageSet train = synthetic(37, 3, 6, 6, 1);
  ImageSet test = synthetic(11, 3, 6, 6, 2);
  ImageTransform norm = ImageTransform::standard(train);
  fs::path train_file = sealed_images_path(dir / "sealed", "syn", "train");
  fs::path test_file = sealed_images_path(dir / "sealed", "syn", "test");
  SealedImageInfo train_info, test_info;

  Fixture() {
    const SealedImageDataset d =
        seal_image_dataset(train, test, dir / "sealed", "syn", key, tee::Cipher::Aes256Gcm, 256);
    train_info = d.train;
    test_info = d.test;
  }
};

void flip_byte(const fs::path& f, std::uint64_t at) {
  std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(at));
  const char c = static_cast<char>(io.get());
  io.seekp(static_cast<std::streamoff>(at));
  io.put(static_cast<char>(c ^ 0x01));
}

template <typename E, typename F>
void expect_throw_naming(F f, const std::vector<std::string>& needles) {
  try {
    f();
    FAIL() << "no exception";
  } catch (const E& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(SealedImages, SealWritesRecordsAndMetadata) {
  Fixture f;
  EXPECT_EQ(f.train_file, f.dir / "sealed" / "syn_train.images.sealed");
  const tee::SealedHeader h = tee::read_sealed_header(f.train_file);
  EXPECT_EQ(h.chunk_size, 256u);
  EXPECT_NE(h.metadata.find("\"kind\":\"image-set\",\"split\":\"train\",\"images\":37,\"channels\":3,"
                            "\"height\":6,\"width\":6,\"classes\":10,\"source\":\"synthetic 1\""),
            std::string::npos)
      << h.metadata;
  // The plaintext is the records: label byte, then the C*H*W pixels.
  const auto plain = tee::read_sealed_file(f.train_file, f.key);
  ASSERT_EQ(plain.size(), 37u * 109u);
  for (std::size_t i = 0; i < 37; ++i) {
    EXPECT_EQ(plain[i * 109], f.train.labels[i]);
    EXPECT_TRUE(std::equal(plain.begin() + static_cast<std::ptrdiff_t>(i * 109 + 1),
                           plain.begin() + static_cast<std::ptrdiff_t>((i + 1) * 109),
                           f.train.pixels.begin() + static_cast<std::ptrdiff_t>(i * 108)));
  }
  // Without the key: the same metadata, mean/std read back as the very same floats (both splits).
  for (const fs::path& file : {f.train_file, f.test_file}) {
    const SealedImageInfo i = read_sealed_image_info(file);
    EXPECT_EQ(i.C, 3);
    EXPECT_EQ(i.H, 6);
    EXPECT_EQ(i.classes, 10);
    EXPECT_EQ(i.mean, f.norm.mean);
    EXPECT_EQ(i.std, f.norm.std);
  }
  EXPECT_EQ(read_sealed_image_info(f.test_file).images, 11u);
  EXPECT_EQ(read_sealed_image_info(f.test_file).split, "test");
}

// The heart of it: the sealed loader serves ImageLoader's batches bit for bit.
TEST(SealedImages, BatchesEqualImageLoaderDirectAndBounce) {
  Fixture f;
  struct Case {
    uint64_t seed;
    bool shuffle, augment;
    uint64_t first;
    int count;
  };
  const std::vector<Case> cases = {{42, true, false, 0, 5},  {42, true, true, 30, 16},
                                   {7, false, false, 35, 9}, {7, true, true, 100, 37},
                                   {1, false, true, 3, 1},   {9, true, false, 74, 0}};
  for (const IngressMode mode : {IngressMode::Direct, IngressMode::Bounce}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(ingress_mode_name(mode)) + " seed " + std::to_string(c.seed) + " first " +
                   std::to_string(c.first) + " count " + std::to_string(c.count) +
                   (c.shuffle ? " shuffled" : "") + (c.augment ? " augmented" : ""));
      Profiler prof;
      SealedImageSet sealed(f.train_file, "train", f.key, &prof);
      ImageTransform tf = f.norm;
      ImageTransform stf = sealed.info().transform();
      tf.random_crop = tf.hflip = stf.random_crop = stf.hflip = c.augment;
      ImageLoader ref(f.train, tf, c.seed, c.shuffle);
      SealedImageLoader got(sealed, stf, c.seed, c.shuffle, {mode, tee::Cipher::Aes256Gcm, 1, 0}, &prof);
      ASSERT_EQ(got.num_samples(), 37u);
      Batch a, b;
      for (uint64_t first = c.first; first < c.first + 3 * 37; first += 37) {  // three epochs
        ref.fill(a, first, c.count);
        got.fill(b, first, c.count);
        EXPECT_EQ(a.B, b.B);
        EXPECT_EQ(b.T, 0);
        EXPECT_EQ(a.images, b.images);
        EXPECT_EQ(a.targets, b.targets);
      }
      EXPECT_GT(prof.count(Counter::MessagesOpened), 0);
      EXPECT_EQ(prof.count(Counter::MessagesSealed), mode == IngressMode::Bounce ? 3 : 0);
      if (mode == IngressMode::Bounce) {
        EXPECT_EQ(prof.count(Counter::BytesSealed), 3 * c.count * 109);
      }
    }
  }
  // The test split with the training statistics, as the val stream.
  SealedImageSet sealed_test(f.test_file, "test", f.key);
  ImageLoader ref(f.test, f.norm, 5, false);
  SealedImageLoader got(sealed_test, sealed_test.info().transform(), 5, false);
  Batch a, b;
  ref.fill(a, 0, 11);
  got.fill(b, 0, 11);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.targets, b.targets);
  got.check_shape(3, 6, 6, 10);
  EXPECT_THROW(got.check_shape(1, 28, 28, 10), InputError);
}

TEST(SealedImages, TamperedRecordChunkFailsWhenABatchTouchesIt) {
  Fixture f;
  const tee::SealedHeader h = tee::read_sealed_header(f.train_file);
  flip_byte(f.train_file, h.chunk_offset(5) + 7);       // plaintext 1280..1535: images 11..14
  SealedImageSet sealed(f.train_file, "train", f.key);  // chunk 0 is intact
  SealedImageLoader loader(sealed, {}, 0, /*shuffle=*/false);
  Batch b;
  loader.fill(b, 0, 8);  // images 0..7: chunks 0..3
  expect_throw_naming<IntegrityError>([&] { loader.fill(b, 12, 1); }, {"syn_train.images.sealed", "chunk 5"});
}

TEST(SealedImages, TamperedMetadataFailsToOpen) {
  Fixture f;
  // "classes":10 -> "classes":11: still well-formed, but the header digest no longer matches.
  const tee::SealedHeader h = tee::read_sealed_header(f.train_file);
  const std::size_t at = h.metadata.find("\"classes\":10") + 11;
  flip_byte(f.train_file, tee::SealedHeader::kFixedSize + at);
  EXPECT_EQ(read_sealed_image_info(f.train_file).classes, 11);  // the unauthenticated view changed...
  expect_throw_naming<IntegrityError>([&] { SealedImageSet s(f.train_file, "train", f.key); },
                                      {"syn_train.images.sealed"});  // ...and is refused with the key
}

TEST(SealedImages, TruncatedFileWrongKeyAndWrongKind) {
  Fixture f;
  fs::resize_file(f.test_file, fs::file_size(f.test_file) - 10);
  expect_throw_naming<IntegrityError>([&] { SealedImageSet s(f.test_file, "test", f.key); },
                                      {"syn_test.images.sealed"});
  const auto wrong = tee::DatasetKey::random();
  expect_throw_naming<IntegrityError>([&] { SealedImageSet s(f.train_file, "train", wrong); },
                                      {"syn_train.images.sealed", "key fingerprint mismatch"});
  // A sealed file of another kind (a token shard) under the right key.
  const fs::path other = f.dir / "tok_train.images.sealed";
  tee::SealOptions opts;
  opts.metadata = "{\"kind\":\"token-shard\",\"name\":\"x.bin\",\"tokens\":3,\"vocab\":256}";
  tee::write_sealed_file(other, f.key, std::vector<std::uint8_t>(1030, 0), opts);
  expect_throw_naming<InputError>([&] { SealedImageSet s(other, "train", f.key); },
                                  {"tok_train.images.sealed", "not a sealed image set"});
  // An image set whose size does not match its metadata (a bad sealer): InputError.
  const fs::path bad = f.dir / "bad_train.images.sealed";
  opts.metadata = tee::read_sealed_header(f.train_file).metadata;
  tee::write_sealed_file(bad, f.key, std::vector<std::uint8_t>(100, 0), opts);
  expect_throw_naming<InputError>([&] { SealedImageSet s(bad, "train", f.key); },
                                  {"bad_train.images.sealed", "records"});
}

TEST(SealedImages, BounceStagingTamperingIsCaught) {
  Fixture f;
  SealedImageSet sealed(f.train_file, "train", f.key);
  SealedImageLoader loader(sealed, f.norm, 3, true,
                           {IngressMode::Bounce, tee::Cipher::ChaCha20Poly1305, 2, 0}, nullptr,
                           std::make_unique<datatest::TamperingBounceBuffer>(1, 5));
  Batch b;
  loader.fill(b, 0, 4);  // message 0 crosses untouched
  expect_throw_naming<IntegrityError>([&] { loader.fill(b, 4, 4); },
                                      {"ingress bounce buffer of rank 2, message 1"});
}

TEST(SealedImages, FindsFilesByPrefixDirectoryOrFile) {
  Fixture f;
  const std::string prefix = (f.dir / "sealed" / "syn").string();
  EXPECT_EQ(find_sealed_images(prefix, "train"), f.train_file);
  EXPECT_EQ(find_sealed_images(prefix, "test"), f.test_file);
  EXPECT_EQ(find_sealed_images((f.dir / "sealed").string(), "test"), f.test_file);
  EXPECT_EQ(find_sealed_images(f.train_file.string(), "test"), f.test_file);
  EXPECT_FALSE(find_sealed_images((f.dir / "nothing").string(), "train"));
  EXPECT_FALSE(find_sealed_images("fashion-mnist", "train"));
  seal_image_dataset(f.test, f.test, f.dir / "sealed", "two", f.key, tee::Cipher::Aes256Gcm);
  EXPECT_THROW(find_sealed_images((f.dir / "sealed").string(), "train"), InputError);  // ambiguous
  EXPECT_THROW(read_sealed_image_info(f.dir / "missing_train.images.sealed"), InputError);
}

TEST(SealedImages, SealRefusesBadInput) {
  Fixture f;
  ImageSet empty = synthetic(0, 1, 4, 4, 3);
  const ImageTransform n1{{0.5f}, {0.2f}};
  DatasetManifest m(kImageSetKind, new_dataset_id());
  m.add("train", 1, {});
  const DatasetBinding b = m.binding("train", 0);
  EXPECT_THROW(seal_image_set(empty, "train", n1, b, f.dir / "e", f.key, tee::Cipher::Aes256Gcm), InputError);
  ImageSet one = synthetic(2, 1, 4, 4, 3);
  EXPECT_THROW(seal_image_set(one, "train", f.norm, b, f.dir / "m", f.key, tee::Cipher::Aes256Gcm),
               InputError);
  EXPECT_THROW(seal_image_set(one, "test", n1, b, f.dir / "s", f.key, tee::Cipher::Aes256Gcm), InputError);
  one.labels[1] = 10;
  EXPECT_THROW(seal_image_set(one, "train", n1, b, f.dir / "l", f.key, tee::Cipher::Aes256Gcm), InputError);
  EXPECT_THROW(seal_image_dataset(one, one, f.dir.path(), "l2", f.key, tee::Cipher::Aes256Gcm), InputError);
  EXPECT_FALSE(fs::exists(f.dir / "l"));  // nothing half-written
}

}  // namespace
}  // namespace tt
