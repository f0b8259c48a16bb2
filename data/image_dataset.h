// Image datasets (MNIST / Fashion-MNIST idx files, CIFAR-10 binary batches) and the deterministic,
// resumable, rank-splittable loader over them.
//
// Samples follow TokenLoader's rules (data/token_loader.h): a run-wide global sample index g maps to
//   epoch = g / N,  j = g % N,  image = perm_epoch(j)
// with perm_epoch a Fisher-Yates permutation drawn from derive_seed(seed, kDataStream, epoch) (identity
// when shuffle is off, for evaluation); rank r of P at step s takes global_sample_index(...) .. + B, so
// the stream depends only on (data, seed), never on the rank count or where a run was resumed.
//
// Augmentation (training only, optional): a random crop after zero padding (pad 4 by default: the
// image is shifted by dy, dx in [-pad, pad], uncovered pixels are 0 BEFORE normalization, i.e. black,
// as torchvision's RandomCrop(padding=4)) and a horizontal flip with probability 1/2. Both are drawn
// from derive_seed(seed, kAugStream, g): a pure function of (seed, g), so resuming or re-splitting a run
// reproduces them exactly.
//
// Normalization: x = (pixel / 255 - mean[c]) / std[c]; ImageTransform::standard() uses the training
// set's per-channel statistics.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model.h"

namespace tt {

struct ImageSet {
  std::string source;           // for messages: the file(s) it came from
  int C = 0, H = 0, W = 0;      // image shape
  int classes = 10;             // labels are in [0, classes)
  std::vector<uint8_t> pixels;  // (N, C, H, W) raw 0..255
  std::vector<int32_t> labels;  // (N)
  std::size_t size() const { return labels.size(); }
  std::string describe() const;  // "fashion-mnist train: 60000 images 1x28x28, 10 classes (...)"
  // SHA-256 (lowercase hex) of what a run trains on, decoded (a gzipped file digests as its content): a
  // line naming the shape, classes and count, the pixels, then each label as a little-endian int32.
  // What ranks training on plain images agree on (engine/run/input_agreement.h).
  std::string sha256() const;
};

// MNIST / Fashion-MNIST idx pair (gzip-compressed or plain; detected from the content). Throws
// InputError on a missing file, wrong magic, truncated data, mismatched counts or labels >= 10.
ImageSet read_idx(const std::filesystem::path& images, const std::filesystem::path& labels);
// CIFAR-10 binary batches (records of 1 label byte + 3x32x32 pixels). Throws InputError likewise.
ImageSet read_cifar10(const std::vector<std::filesystem::path>& batches);

enum class ImageFormat { Idx, Cifar10 };

// The files a dataset's split is read from (find_image_files), before any is read.
struct ImageFiles {
  std::string source;  // "<spec> <split>": ImageSet::source of what they decode to
  ImageFormat format = ImageFormat::Idx;
  std::vector<std::filesystem::path> files;  // Idx: images, labels; Cifar10: the batches in order
};

// Resolves `spec` for split "train" or "test" to its files (as open_image_dataset, which reads them).
ImageFiles find_image_files(const std::string& spec, const std::string& split);
// Reads and decodes them (read_idx / read_cifar10), with the source named as found.
ImageSet read_image_files(const ImageFiles& files);

// Resolves `spec` for split "train" or "test":
//   "fashion-mnist" -> /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist);
//   a directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (MNIST layout);
//   a directory with CIFAR-10 data_batch_{1..5}.bin / test_batch.bin (or its cifar-10-batches-bin/).
// Throws InputError naming what was looked for and how to get it.
ImageSet open_image_dataset(const std::string& spec, const std::string& split);

struct ImageTransform {
  std::vector<float> mean;  // (C) in [0, 1] units; empty = no normalization (x = pixel / 255)
  std::vector<float> std;   // (C)
  bool random_crop = false;
  int crop_pad = 4;
  bool hflip = false;
  // Per-channel mean / std of `train` (deterministic), no augmentation.
  static ImageTransform standard(const ImageSet& train);
};

// Raw image records, as CIFAR-10 stores them and sealed image files hold them: 1 label byte, then
// the C*H*W pixel bytes (channel-major).
inline std::size_t image_record_bytes(int C, int H, int W) {
  return 1 + static_cast<std::size_t>(C) * static_cast<std::size_t>(H) * static_cast<std::size_t>(W);
}

// Throws InputError if images of `source` (C x H x W, `classes`) do not fit a model taking
// model_C x model_H x model_W images and model_classes classes (naming the dataset and the fix).
void check_image_shape(const std::string& source, int C, int H, int W, int classes, int model_C, int model_H,
                       int model_W, int model_classes);

// What ImageLoader does that does not depend on where the pixels come from: the sample order
// (epoch permutations), augmentation and normalization. ImageLoader (pixels in memory) and
// SealedImageLoader (data/sealed_images.h: records opened out of a sealed file) both use it, so
// both serve identical batches for the same data, transform and seed.
class ImageBatcher {
 public:
  static constexpr uint64_t kDataStream = 0x64617461;  // "data", as TokenLoader
  static constexpr uint64_t kAugStream = 0x61756720;   // "aug "

  // n images of C x H x W. Throws InputError (naming `source`) on n == 0, n >= 2^32, a transform
  // whose mean/std do not have C entries, or a negative crop padding.
  ImageBatcher(const std::string& source, int C, int H, int W, uint64_t n, ImageTransform transform,
               uint64_t seed, bool shuffle);

  uint64_t num_samples() const { return n_; }
  uint64_t image_of(uint64_t g);  // index in [0, N) that global sample g reads
  // Sets out.B = count, out.T = 0, clears out.tokens, sizes out.images (B, C, H, W) and out.targets
  // (B). Reuses out's capacity. Throws InputError if count < 0.
  void prepare(Batch& out, int count) const;
  // Writes sample b of `out` (sized by prepare): the augmented, normalized image of global sample g
  // from its raw pixels (C, H, W), and its label.
  void put(Batch& out, int b, uint64_t g, const uint8_t* pixels, int32_t label) const;

 private:
  const std::vector<uint32_t>& permutation(uint64_t epoch);

  int C_, H_, W_;
  uint64_t n_;
  ImageTransform tf_;
  uint64_t seed_;
  bool shuffle_;
  std::vector<float> scale_, shift_;  // (C) x = pixel * scale + shift
  uint64_t perm_epoch_ = 0;
  std::vector<uint32_t> perm_;
};

class ImageLoader {
 public:
  static constexpr uint64_t kDataStream = ImageBatcher::kDataStream;
  static constexpr uint64_t kAugStream = ImageBatcher::kAugStream;

  // Keeps a reference to `data`, which must outlive the loader. Throws InputError on an empty set or a
  // transform whose mean/std do not have C entries.
  ImageLoader(const ImageSet& data, ImageTransform transform, uint64_t seed, bool shuffle);
  ImageLoader(ImageSet&&, ImageTransform, uint64_t, bool) = delete;  // would dangle

  uint64_t num_samples() const { return data_.size(); }  // N: samples per epoch
  const ImageSet& data() const { return data_; }
  // Throws InputError if the images are not C x H x W (naming the dataset and the fix).
  void check_shape(int C, int H, int W, int classes) const;

  uint64_t image_of(uint64_t g) { return batcher_.image_of(g); }
  // Sets out.B = count, out.T = 0, out.images (B, C, H, W) and out.targets (B) for samples
  // [first_sample, first_sample + count). Reuses out's capacity.
  void fill(Batch& out, uint64_t first_sample, int count);

 private:
  const ImageSet& data_;
  ImageBatcher batcher_;
};

}  // namespace tt
