// Image data for `teetrain train` and `teetrain eval`: opens a dataset's train and test splits,
// normalizes with the training split's statistics and serves both as BatchFns.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/image_dataset.h"
#include "engine/trainer.h"

namespace tt::cli {

struct ImageSourceOptions {
  std::string data;               // --data: fashion-mnist, an idx directory or a CIFAR-10 directory
  uint64_t seed = 1337;           // data order and augmentation
  bool augment = false;           // random crop (pad 4) and horizontal flip on the training split
  bool tee = false;               // TEE mode: sealed image shards do not exist yet, so plain data must be
  bool allow_plain_data = false;  // allowed explicitly with --allow-plain-data
};

// Owns the datasets and loaders behind the BatchFns (held by pointer so the BatchFns' references
// survive moving the ImageSource).
struct ImageSource {
  std::unique_ptr<ImageSet> train_set, test_set;
  std::unique_ptr<ImageLoader> train_loader, test_loader;
  BatchFn train;  // shuffled per epoch (and augmented when asked)
  BatchFn val;    // the test split in file order
  std::string describe;
  int channels = 0, image_size = 0, classes = 0;

  // Throws InputError when the images do not fit a model of this shape (e.g. evaluating a
  // checkpoint trained on 28x28 images on a 32x32 dataset).
  void check_model(int model_channels, int model_size, int model_classes) const;
};

// Throws InputError on a missing or malformed dataset, non-square images, or TEE mode without
// --allow-plain-data.
ImageSource open_image_source(const ImageSourceOptions& o);

}  // namespace tt::cli
