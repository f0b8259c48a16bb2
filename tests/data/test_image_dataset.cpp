// Image data: idx (plain and gzip) and CIFAR-10 readers, bad input, the deterministic loader
// (permutation, rank split, augmentation as a function of (seed, sample), normalization).
#include <gtest/gtest.h>
#include <zlib.h>

#include <set>

#include "base/error.h"
#include "data/image_dataset.h"
#include "data/token_loader.h"
#include "tests/common/temp_dir.h"
#include "tests/data/data_test_util.h"

namespace tt {
namespace {

using datatest::be32;

using testing::TempDir;
using testing::write_bytes;

// n images of HxW where pixel k of image i is (i * 7 + k) % 256; labels i % 10.
std::string idx_images(uint32_t n, uint32_t h, uint32_t w) {
  std::string s = be32(0x803) + be32(n) + be32(h) + be32(w);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < h * w; ++k) s.push_back(static_cast<char>((i * 7 + k) % 256));
  return s;
}
std::string idx_labels(uint32_t n) {
  std::string s = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}
void write_gz(const std::filesystem::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

using datatest::expect_input_error;

TEST(ImageIdx, PlainAndGzipAgree) {
  TempDir d;
  write_bytes(d / "train-images-idx3-ubyte", idx_images(20, 5, 4));
  write_bytes(d / "train-labels-idx1-ubyte", idx_labels(20));
  write_gz(d / "a.gz", idx_images(20, 5, 4));
  write_gz(d / "b.gz", idx_labels(20));
  const ImageSet plain = read_idx(d / "train-images-idx3-ubyte", d / "train-labels-idx1-ubyte");
  const ImageSet gz = read_idx(d / "a.gz", d / "b.gz");
  EXPECT_EQ(plain.size(), 20u);
  EXPECT_EQ(plain.C, 1);
  EXPECT_EQ(plain.H, 5);
  EXPECT_EQ(plain.W, 4);
  EXPECT_EQ(plain.pixels, gz.pixels);
  EXPECT_EQ(plain.labels, gz.labels);
  EXPECT_EQ(plain.pixels[20 * 3 + 2], (3 * 7 + 2) % 256);
  EXPECT_EQ(plain.labels[13], 3);
  const ImageSet viaDir = open_image_dataset(d.path().string(), "train");
  EXPECT_EQ(viaDir.pixels, plain.pixels);
  // The content digest is of what trains, decoded: the gzipped copy digests alike; one pixel or one
  // label more or less does not.
  EXPECT_EQ(plain.sha256(), gz.sha256());
  EXPECT_EQ(plain.sha256().size(), 64u);
  ImageSet pixel = plain, label = plain;
  pixel.pixels[7] ^= 1;
  label.labels[13] = 4;
  EXPECT_NE(pixel.sha256(), plain.sha256());
  EXPECT_NE(label.sha256(), plain.sha256());
  expect_input_error([&] { open_image_dataset(d.path().string(), "test"); }, "t10k-images-idx3-ubyte");
}

TEST(ImageIdx, BadInput) {
  TempDir d;
  write_bytes(d / "l", idx_labels(4));
  std::string im = idx_images(4, 3, 3);
  std::string bad = im;
  bad[3] = 0x01;  // labels magic in an image file
  write_bytes(d / "bad_magic", bad);
  expect_input_error([&] { read_idx(d / "bad_magic", d / "l"); }, "bad_magic: not an idx image file");
  write_bytes(d / "trunc", im.substr(0, im.size() - 5));
  expect_input_error([&] { read_idx(d / "trunc", d / "l"); }, "trunc: truncated");
  write_gz(d / "trunc.gz", im);
  {
    // Cut the gzip stream in the middle.
    std::ifstream f(d / "trunc.gz", std::ios::binary);
    std::string z((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    write_bytes(d / "cut.gz", z.substr(0, z.size() / 2));
  }
  expect_input_error([&] { read_idx(d / "cut.gz", d / "l"); }, "cut.gz");
  std::string lab = idx_labels(4);
  lab[8 + 2] = 10;
  write_bytes(d / "im", im);
  write_bytes(d / "lab10", lab);
  expect_input_error([&] { read_idx(d / "im", d / "lab10"); }, "label 10");
  write_bytes(d / "l5", idx_labels(5));
  expect_input_error([&] { read_idx(d / "im", d / "l5"); }, "labels");
  expect_input_error([&] { read_idx(d / "missing", d / "l"); }, "missing': not found");
  expect_input_error([&] { open_image_dataset((d / "nowhere").string(), "train"); }, "not found");
}

TEST(ImageCifar, ReadsRecordsAndRejectsBadOnes) {
  TempDir d;
  std::string rec;
  for (int r = 0; r < 3; ++r) {
    rec.push_back(static_cast<char>(r + 1));
    for (int k = 0; k < 3072; ++k) rec.push_back(static_cast<char>((r + k) % 256));
  }
  write_bytes(d / "test_batch.bin", rec);
  const ImageSet s = open_image_dataset(d.path().string(), "test");
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.C, 3);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(s.pixels[3072 + 1024], (1 + 1024) % 256);  // image 1, channel 1, pixel 0
  write_bytes(d / "short.bin", rec.substr(0, rec.size() - 1));
  expect_input_error([&] { read_cifar10({d / "short.bin"}); }, "short.bin");
  std::string badlab = rec;
  badlab[0] = 12;
  write_bytes(d / "badlab.bin", badlab);
  expect_input_error([&] { read_cifar10({d / "badlab.bin"}); }, "label 12");
}

ImageSet synthetic(int n, int C, int H, int W) {
  ImageSet s;
  s.source = "synthetic";
  s.C = C;
  s.H = H;
  s.W = W;
  for (int i = 0; i < n; ++i) {
    s.labels.push_back(i % 10);
    for (int k = 0; k < C * H * W; ++k) s.pixels.push_back(static_cast<uint8_t>((i * 31 + k) % 256));
  }
  return s;
}

TEST(ImageLoader, PermutationEpochsRanksAndResume) {
  const ImageSet s = synthetic(37, 1, 4, 4);
  ImageLoader a(s, {}, 5, true);
  std::set<uint64_t> seen;
  for (uint64_t g = 0; g < 37; ++g) seen.insert(a.image_of(g));
  EXPECT_EQ(seen.size(), 37u);  // each image once per epoch
  bool differs = false;
  for (uint64_t g = 0; g < 37; ++g) differs |= a.image_of(g) != a.image_of(37 + g);
  EXPECT_TRUE(differs);  // a new order each epoch
  // Two ranks of B=4 cover exactly what one rank of B=8 does, in any order of calls (resumable).
  Batch one, r0, r1;
  ImageLoader b(s, {}, 5, true);
  a.fill(one, global_sample_index(3, 0, 0, 8, 1, 1), 8);
  b.fill(r1, global_sample_index(3, 0, 1, 4, 2, 1), 4);
  b.fill(r0, global_sample_index(3, 0, 0, 4, 2, 1), 4);
  std::vector<float> joined = r0.images;
  joined.insert(joined.end(), r1.images.begin(), r1.images.end());
  EXPECT_EQ(joined, one.images);
  EXPECT_EQ(one.T, 0);
  EXPECT_EQ(one.B, 8);
  ImageLoader c(s, {}, 5, false);
  EXPECT_EQ(c.image_of(40), 3u);  // no shuffle: dataset order
}

TEST(ImageLoader, NormalizationAndAugmentation) {
  const ImageSet s = synthetic(6, 3, 8, 8);
  ImageTransform t = ImageTransform::standard(s);
  ASSERT_EQ(t.mean.size(), 3u);
  ImageLoader plain(s, t, 1, false);
  Batch b;
  plain.fill(b, 2, 1);
  const float px = s.pixels[2 * 192 + 64 + 9];  // image 2, channel 1, (1, 1)
  EXPECT_NEAR(b.images[64 + 9], (px / 255.0f - t.mean[1]) / t.std[1], 1e-5);
  EXPECT_EQ(b.targets[0], 2);

  t.random_crop = true;
  t.hflip = true;
  ImageLoader aug1(s, t, 9, true), aug2(s, t, 9, true);
  Batch x, y, z;
  aug1.fill(x, 100, 6);
  aug2.fill(y, 103, 3);  // same samples 103..105 fetched separately: same crops and flips
  EXPECT_TRUE(std::equal(y.images.begin(), y.images.end(), x.images.begin() + 3 * 192));
  aug2.fill(z, 100, 6);
  EXPECT_EQ(x.images, z.images);
  Batch noaug;
  ImageTransform t0 = ImageTransform::standard(s);
  ImageLoader na(s, t0, 9, true);
  na.fill(noaug, 100, 6);
  EXPECT_NE(noaug.images, x.images);  // augmentation did something
  EXPECT_EQ(noaug.targets, x.targets);

  expect_input_error([&] { plain.check_shape(1, 28, 28, 10); }, "configure the model");
  plain.check_shape(3, 8, 8, 10);
}

TEST(ImageFashionMnist, ReadsDebianPackage) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
  const ImageSet s = open_image_dataset("fashion-mnist", "test");
  EXPECT_EQ(s.size(), 10000u);
  EXPECT_EQ(s.H, 28);
  EXPECT_EQ(s.W, 28);
  EXPECT_EQ(s.pixels.size(), 10000u * 784u);
  std::vector<int> counts(10);
  for (int32_t y : s.labels) ++counts[static_cast<std::size_t>(y)];
  for (int c : counts) EXPECT_EQ(c, 1000);
}

}  // namespace
}  // namespace tt
