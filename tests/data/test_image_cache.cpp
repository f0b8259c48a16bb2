// The process's decoded image sets (Note [Shared decoded images], data/image_cache.h): one decode per
// split for all ranks and runs, a rewritten file read again, a failed read not kept, the digest and
// statistics those who share it would each have computed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/error.h"
#include "data/image_cache.h"
#include "tests/common/temp_dir.h"
#include "tests/data/data_test_util.h"

namespace tt {
namespace {

using datatest::be32;

using testing::TempDir;
using testing::write_bytes;

// An MNIST-layout split of n images of 4x4 whose pixels start at `first`.
void write_split(const std::filesystem::path& dir, const std::string& pre, uint32_t n, uint8_t first) {
  std::string im = be32(0x803) + be32(n) + be32(4) + be32(4);
  for (uint32_t k = 0; k < n * 16; ++k) im.push_back(static_cast<char>(first + k));
  std::string lb = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) lb.push_back(static_cast<char>(i % 10));
  write_bytes(dir / (pre + "-images-idx3-ubyte"), im);
  write_bytes(dir / (pre + "-labels-idx1-ubyte"), lb);
}

TEST(ImageSetCache, OneDecodeForAllRanksAndTheirOwnResults) {
  TempDir d;
  write_split(d.path(), "train", 12, 3);
  ImageSetCache cache;
  // Four ranks' threads at once: all get the one copy.
  std::vector<std::shared_ptr<const DecodedImageSet>> got(4);
  {
    std::vector<std::jthread> ranks;
    for (std::size_t r = 0; r < got.size(); ++r)
      ranks.emplace_back([&, r] { got[r] = cache.open(d.path().string(), "train"); });
  }
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
  // What each rank would have computed on its own copy.
  const ImageSet own = open_image_dataset(d.path().string(), "train");
  EXPECT_EQ(got[0]->set().pixels, own.pixels);
  EXPECT_EQ(got[0]->set().labels, own.labels);
  EXPECT_EQ(got[0]->set().source, own.source);
  EXPECT_EQ(got[0]->sha256(), own.sha256());
  const ImageTransform standard = ImageTransform::standard(own);
  EXPECT_EQ(got[0]->standard().mean, standard.mean);
  EXPECT_EQ(got[0]->standard().std, standard.std);
  // The same split again (a later run of the plan): the same copy; without a cache: a copy of its own.
  EXPECT_EQ(cache.open(d.path().string(), "train").get(), got[0].get());
  EXPECT_NE(open_decoded_images(nullptr, d.path().string(), "train").get(), got[0].get());
}

TEST(ImageSetCache, ARewrittenFileIsReadAgain) {
  TempDir d;
  write_split(d.path(), "train", 12, 3);
  ImageSetCache cache;
  const auto first = cache.open(d.path().string(), "train");
  // Same size, same inode, new content. A file's times tick with the kernel's coarse clock, so the
  // rewrite's modification time is set apart as a later write's would be.
  const auto when = std::filesystem::last_write_time(d / "train-images-idx3-ubyte");
  write_split(d.path(), "train", 12, 9);
  std::filesystem::last_write_time(d / "train-images-idx3-ubyte", when + std::chrono::seconds(1));
  const auto second = cache.open(d.path().string(), "train");
  EXPECT_NE(second.get(), first.get());
  EXPECT_EQ(second->set().pixels[0], 9);
  EXPECT_EQ(first->set().pixels[0], 3);  // a run holding the old copy keeps what it agreed on
  EXPECT_NE(second->sha256(), first->sha256());
}

TEST(ImageSetCache, AFailedReadIsNotKept) {
  TempDir d;
  write_bytes(d / "train-images-idx3-ubyte", "not an idx file");
  write_bytes(d / "train-labels-idx1-ubyte", "nor this");
  ImageSetCache cache;
  datatest::expect_input_error([&] { cache.open(d.path().string(), "train"); }, "not an idx image file");
  datatest::expect_input_error([&] { cache.open(d.path().string(), "train"); }, "not an idx image file");
  write_split(d.path(), "train", 12, 3);
  EXPECT_EQ(cache.open(d.path().string(), "train")->set().size(), 12u);
}

}  // namespace
}  // namespace tt
