// Decoded image sets shared read-only by the ranks and runs of one process: a process that hosts its
// ranks as threads (--ranks-per-process) or makes many runs (`teetrain runs`) decodes each split once
// instead of once per rank and run (Fashion-MNIST's 26 MB of gzip and its statistics cost a rank more
// than a small emulated run's steps).
//
// Note [Shared decoded images]: what is shared is a plain (unsealed) split's decoded pixels and labels,
// its content digest (ImageSet::sha256) and its standard normalization, all pure functions of the
// files' bytes. It is sound because:
// - every rank of the process would read the same files: the cache is keyed by the dataset spec, the
//   split and each file's identity as stat(2) gives it (device, inode, size, modification and status
//   change times), so a file replaced or rewritten between two runs is read again;
// - a rank's integrity checks on plain data are unchanged: plain images carry no authentication, and
//   what the ranks check is that they train on the same bytes, by agreeing on the digest
//   (engine/run/input_agreement.h). Every rank of the process would hash the same bytes, so one hash per
//   process is what each rank would have computed; processes still compare theirs;
// - nothing shared is writable: ranks get a shared_ptr<const DecodedImageSet>;
// - sealed image sets are never shared: each rank opens and authenticates its own (SealedImageSet, with
//   the dataset key released to it), so a sealed run's checks are per rank as before.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "data/image_dataset.h"

namespace tt {

// One decoded split and what every rank computes from it, each computed once on first use.
class DecodedImageSet {
 public:
  explicit DecodedImageSet(ImageSet set) : set_(std::move(set)) {}
  const ImageSet& set() const { return set_; }
  const std::string& sha256() const;       // set().sha256()
  const ImageTransform& standard() const;  // ImageTransform::standard(set())

 private:
  ImageSet set_;
  mutable std::once_flag sha_once_, standard_once_;
  mutable std::string sha256_;
  mutable ImageTransform standard_;
};

// Owned by whatever owns a process's ranks or runs (Note [Shared decoded images]); safe to call from
// the ranks' threads at once: one of them decodes a split while the others wait for it. A split that
// fails to read is not cached: each caller gets its own error, as from open_image_dataset.
class ImageSetCache {
 public:
  std::shared_ptr<const DecodedImageSet> open(const std::string& spec, const std::string& split);

 private:
  // (spec, split, per file: path, device, inode, size, mtime ns, ctime ns)
  using Key = std::tuple<std::string, std::string, std::vector<std::string>>;
  struct Slot {
    std::mutex mu;
    std::shared_ptr<const DecodedImageSet> set;
  };
  std::mutex mu_;
  std::map<Key, std::shared_ptr<Slot>> slots_;
};

// Reads a split through `cache`, or on its own when `cache` is null.
std::shared_ptr<const DecodedImageSet> open_decoded_images(ImageSetCache* cache, const std::string& spec,
                                                           const std::string& split);

}  // namespace tt
