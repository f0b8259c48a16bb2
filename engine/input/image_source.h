// Image data for a training or evaluation run (token_source.h is the text counterpart): opens a dataset's
// train and test splits, normalizes with the training split's statistics and serves both as BatchFns.
//
// Plain data (fashion-mnist, an idx or a CIFAR-10 directory) is read whole into memory. In TEE mode
// --data names sealed image sets instead ("<dir>/<name>", from `teetrain seal-data --images`): their
// shape is read first from the files' clear metadata, which needs no key, so the model can be sized
// and agreed across ranks before the dataset key is released; open_sealed() then opens them with the
// released key (checking the now authenticated metadata against what was read) and serves batches
// through sealed ingress (data/sealed_images.h).
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "data/image_cache.h"
#include "data/image_dataset.h"
#include "data/sealed_images.h"
#include "engine/trainer.h"
#include "tee/crypto/purpose_keys.h"

namespace tt {

struct ImageSourceOptions {
  std::string data;               // --data: fashion-mnist, an idx or CIFAR-10 directory, or sealed image sets
  uint64_t seed = 1337;           // data order and augmentation
  bool augment = false;           // random crop (pad 4) and horizontal flip on the training split
  bool tee = false;               // TEE mode: --data must name sealed image sets, unless
  bool allow_plain_data = false;  // plain data is allowed explicitly with --allow-plain-data
};

// Owns the datasets and loaders behind the BatchFns (held by pointer so the BatchFns' references
// survive moving the ImageSource).
struct ImageSource {
  ImageSourceOptions options;
  // Plain data, decoded once per process where a cache is given (Note [Shared decoded images],
  // data/image_cache.h).
  std::shared_ptr<const DecodedImageSet> train_set, test_set;
  std::unique_ptr<ImageLoader> train_loader, test_loader;
  // Sealed data: the training split's clear metadata (read without the key) and the test split's
  // file, then, after open_sealed(), the sets.
  std::optional<SealedImageInfo> sealed_train_info;
  std::filesystem::path sealed_test_file;
  std::unique_ptr<SealedImageSet> sealed_train, sealed_test;
  std::unique_ptr<SealedImageLoader> sealed_train_loader, sealed_test_loader;

  BatchFn train;  // shuffled per epoch (and augmented when asked); empty for sealed data until open_sealed()
  BatchFn val;    // the test split in file order
  std::string describe;
  int channels = 0, image_size = 0, classes = 0;

  bool sealed() const { return sealed_train_info.has_value(); }
  uint64_t test_size() const;
  std::string test_source() const;

  // Sealed data only: opens both sealed sets with the dataset key and sets train/val. Throws
  // IntegrityError on a wrong key, a tampered file, metadata that changed since it was read, a
  // file of another split than it is opened as (e.g. the splits swapped), the splits of two datasets
  // or a file without a dataset binding (data/dataset_binding.h); InputError if the (authentic)
  // splits' shapes do not match each other.
  void open_sealed(const tee::DatasetKey& dataset_key, const IngressOptions& ingress, Profiler* profiler);

  // Throws InputError when the images do not fit a model of this shape (e.g. evaluating a
  // checkpoint trained on 28x28 images on a 32x32 dataset).
  void check_model(int model_channels, int model_size, int model_classes) const;
};

// Throws InputError on a missing or malformed dataset, non-square images, plain data in TEE mode
// without --allow-plain-data, or sealed data outside TEE mode. Plain splits are read through `cache`
// when it is given (the process's ranks and runs share them), on their own when it is null.
ImageSource open_image_source(const ImageSourceOptions& o, ImageSetCache* cache);
// Throws the InputError open_image_source throws for plain images in TEE mode without --allow-plain-data.
[[noreturn]] void refuse_plain_images(const std::string& data);

}  // namespace tt
