// Sealed image sets (docs/design.md §7) and the loader that serves image batches from them in TEE mode.
//
// At rest: `teetrain seal-data --images SPEC` turns each split of an image dataset into
// "<out>/<name>_<split>.images.sealed", a sealed file (tee/crypto/sealed_file.h) under the dataset key
// (engine/keys/key_file.h: derive_dataset_key). Its plaintext is N fixed-size records (CIFAR-10's layout):
//   record i = label (1 byte) || pixels (C, H, W) uint8        -> image_record_bytes(C, H, W) bytes
// and its clear, authenticated metadata is
//   {"kind":"image-set","split":"train","images":N,"channels":C,"height":H,"width":W,"classes":K,
//    "source":"fashion-mnist train","mean":[...],"std":[...],
//    "dataset":...,"shard":0,"shards":1,"splits":{"test":1,"train":1},"manifest":...}
// whose last fields are the dataset binding of data/dataset_binding.h (both splits of one seal-data
// run are one dataset; each split is one file, shard 0 of 1),
// where mean/std are the TRAINING split's per-channel statistics (ImageTransform::standard), in
// both splits' files, printed with 9 significant digits so they read back as the very same floats:
// a TEE run normalizes bit for bit like a plain run without decrypting the whole training set.
//
// Before the key is released (e.g. to agree the model's input shape across ranks), the metadata can
// be read without the key (read_sealed_image_info) but is not yet authentic; SealedImageSet opens a
// chunk, which authenticates the header, then checks the binding (the split it is opened as, one
// file per split), and callers compare the two views and the splits' datasets (check_same_dataset).
//
// In training: SealedImageLoader serves exactly ImageLoader's batches for the same images, transform
// and seed (both use ImageBatcher: data/image_dataset.h), but reads each image's record out of the
// sealed file on demand (opening only the chunk(s) it lies in) and moves the raw batch into the rank
// by the ingress mode of data/sealed_ingress.h.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/profiler.h"
#include "data/dataset_binding.h"
#include "data/image_dataset.h"
#include "data/sealed_blob.h"
#include "data/sealed_ingress.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/sealed_file.h"

namespace tt {

inline constexpr const char* kImageSetKind = "image-set";
inline constexpr const char* kSealedImagesSuffix = ".images.sealed";
// Small chunks for images: a shuffled batch opens one chunk (two when a record straddles a boundary)
// per image, so each image costs about a chunk of decryption. A 785-byte Fashion-MNIST record in a
// 4 KiB chunk opens ~5x its size (a 64 KiB chunk would be ~80x), and a 3073-byte CIFAR-10 record at
// most two chunks; the 16-byte tag per chunk keeps the size overhead at 0.4%.
inline constexpr std::uint32_t kImageSealChunkSize = 4096;

// The clear metadata of a sealed image file.
struct SealedImageInfo {
  std::filesystem::path file;
  std::string split;
  std::string source;  // where the images came from, e.g. "fashion-mnist train"
  std::uint64_t images = 0;
  int C = 0, H = 0, W = 0;
  int classes = 0;
  std::vector<float> mean, std;  // (C) the training split's statistics
  std::size_t record_bytes() const { return image_record_bytes(C, H, W); }
  // The training split's normalization, no augmentation.
  ImageTransform transform() const;
  // "fashion-mnist train (sealed: 60000 images 1x28x28, 10 classes)"
  std::string describe() const;
};

// ---- sealing (teetrain seal-data --images) ----

// "<out_dir>/<name>_<split>.images.sealed"
std::filesystem::path sealed_images_path(const std::filesystem::path& out_dir, const std::string& name,
                                         const std::string& split);

// The plaintext a sealed file of `set` holds (its records) as the manifest lists it: size and SHA-256.
// Throws InputError like seal_image_set.
struct RecordsDigest {
  std::uint64_t bytes = 0;
  tee::Sha256Digest sha256{};
};
RecordsDigest image_records_digest(const ImageSet& set);

// Seals `set` (one split, bound by `binding`: see seal_image_dataset) into `output` under dataset_key,
// atomically. `norm` is the training split's normalization (mean/std with set.C entries) recorded in
// the metadata. Throws InputError on an empty set, a label outside [0, min(classes, 256)), a bad
// chunk size, or a binding of another split.
SealedImageInfo seal_image_set(const ImageSet& set, const std::string& split, const ImageTransform& norm,
                               const DatasetBinding& binding, const std::filesystem::path& output,
                               const tee::DatasetKey& dataset_key, tee::Cipher cipher,
                               std::uint32_t chunk_size = kImageSealChunkSize);

// Seals both splits of one image dataset as one sealed dataset (a fresh dataset id; the manifest of
// both record streams bound into both files) to sealed_images_path(out_dir, name, split), each with
// the training split's normalization. Returns {train, test}.
struct SealedImageDataset {
  SealedImageInfo train, test;
  DatasetBinding binding;  // the training file's (dataset id and manifest digest shared by both)
};
SealedImageDataset seal_image_dataset(const ImageSet& train, const ImageSet& test,
                                      const std::filesystem::path& out_dir, const std::string& name,
                                      const tee::DatasetKey& dataset_key, tee::Cipher cipher,
                                      std::uint32_t chunk_size = kImageSealChunkSize);

// ---- finding sealed image files ----

// The sealed file of `split` that `spec` names, or nullopt: a prefix ("<spec>_<split>.images.sealed"),
// a directory holding exactly one "*_<split>.images.sealed" (InputError if several), or a sealed
// file "<prefix>_<any split>.images.sealed" (its sibling for `split`).
std::optional<std::filesystem::path> find_sealed_images(const std::string& spec, const std::string& split);

// Reads the clear metadata without the key: NOT authentic until the file's chunks open. Throws
// InputError if it is not a sealed image set (or its metadata is malformed), IntegrityError if
// the header is damaged.
SealedImageInfo read_sealed_image_info(const std::filesystem::path& file);

// ---- reading ----

// One sealed image file opened for reading. Construction checks the key fingerprint, opens the first
// chunk (which authenticates the header, hence the metadata), checks the binding (the file holds
// `split`, as the only file of it) and the plaintext size against the metadata. Records are read on
// demand. Not thread-safe.
class SealedImageSet {
 public:
  // Throws InputError (missing file, not an image set, size not N records) or IntegrityError
  // (wrong key, tampered header or first chunk, truncated file; no binding, another split than
  // `split`), naming the file.
  SealedImageSet(const std::filesystem::path& file, const std::string& split,
                 const tee::DatasetKey& dataset_key, Profiler* profiler = nullptr);

  const SealedImageInfo& info() const { return info_; }
  const DatasetBinding& binding() const { return binding_; }
  std::uint64_t size() const { return info_.images; }
  std::size_t record_bytes() const { return info_.record_bytes(); }
  // Copies record `image` (record_bytes() bytes: label, then pixels) into out.
  void read_record(std::uint64_t image, tee::MutableByteView out);
  std::string describe() const;  // "<file> (sealed: ...)"

 private:
  std::unique_ptr<SealedBlobReader> reader_;  // a reader is not movable; the set is
  SealedImageInfo info_;
  DatasetBinding binding_;
};

// ImageLoader's sample stream over a SealedImageSet, with sealed ingress. Keeps a reference to the
// set (which must outlive it, and which it reads through: one loader per set).
class SealedImageLoader {
 public:
  // Throws InputError like ImageBatcher (empty set, transform not matching C).
  // `bounce_buffer`: the bounce path's shared memory (null: plain memory; a test's tampering host).
  SealedImageLoader(SealedImageSet& data, ImageTransform transform, uint64_t seed, bool shuffle,
                    IngressOptions ingress = {}, Profiler* profiler = nullptr,
                    std::unique_ptr<BounceBuffer> bounce_buffer = nullptr);
  SealedImageLoader(SealedImageSet&&, ImageTransform, uint64_t, bool, IngressOptions = {},
                    Profiler* = nullptr) = delete;

  uint64_t num_samples() const { return batcher_.num_samples(); }
  const SealedImageSet& data() const { return data_; }
  uint64_t image_of(uint64_t g) { return batcher_.image_of(g); }
  // As ImageLoader::check_shape.
  void check_shape(int C, int H, int W, int classes) const;

  // As ImageLoader::fill: out.images (B, C, H, W), out.targets (B) for samples
  // [first_sample, first_sample + count). Time goes to Phase::Ingress. Throws IntegrityError
  // when a chunk or the bounce buffer fails to open, InputError on a label outside the classes.
  void fill(Batch& out, uint64_t first_sample, int count);

 private:
  SealedImageSet& data_;
  ImageBatcher batcher_;
  Profiler* profiler_;
  std::optional<BounceLink> bounce_;
  IngressThrottle throttle_;
  std::vector<std::uint8_t> staging_;  // (B, record_bytes) raw records as stored
};

}  // namespace tt
