// Sealed datasets bound to what they are (docs/design.md §7): every file `teetrain seal-data` writes
// says, in its authenticated metadata, which dataset, split and shard it is, so a renamed, dropped,
// duplicated or foreign file is refused instead of silently trained on.
//
// One seal-data run is one dataset. It draws a dataset id (16 random bytes, hex) and adds to the
// clear metadata of each file it writes (tee/crypto/sealed_file.h; authenticated by every chunk's
// associated data, so trustworthy once a chunk has opened):
//   "dataset":  "<32 hex>"          the run's id, the same in every file
//   "split":    "train"             the split the file belongs to
//   "shard":    i, "shards": n      its index within the split, and the split's file count
//   "splits":   {"train":n,"val":m} every split of the dataset and its file count
//   "manifest": "<64 hex>"          SHA-256 of the canonical manifest of the whole run:
//
//     teetrain sealed-dataset manifest v1\n
//     kind <kind>\n                                       token-shard | image-set
//     dataset <id>\n
//     file <split> <index> <count> <bytes> <sha256>\n     one line per file, by split then index:
//                                                         its plaintext size and SHA-256 (hex)
//
// The manifest digest commits to the content of every file of the run; a data owner can publish it
// (seal-data prints it) and compare it with the one a run reports. The plaintext itself is unchanged
// (token shards stay llm.c shards).
//
// Readers check the binding only after the file's header is authenticated (a chunk opened): each
// file is of the split it is loaded as; the files of a split come from one dataset (id and manifest)
// and are shards 0..n-1 exactly once each; the splits of one run come from one dataset. Every
// failure is a IntegrityError (exit 3) naming the file; a file without a binding (sealed by an
// older teetrain) is refused with a pointer to `teetrain seal-data`.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tee/digest.h"

namespace tt {

// Upper bound on files per split (and splits per dataset): far above any real dataset, low enough
// that nothing sized from authenticated-but-odd metadata can exhaust memory.
inline constexpr std::uint64_t kMaxBoundShards = std::uint64_t{1} << 20;

struct DatasetBinding {
  std::string dataset;  // 32 lowercase hex: the seal-data run's random id
  std::string split;    // [a-z0-9]+
  std::uint64_t shard = 0;
  std::uint64_t shards = 0;
  std::map<std::string, std::uint64_t> splits;  // split -> number of files
  std::string manifest;                         // 64 lowercase hex: SHA-256 of the canonical manifest

  // "dataset 3f2a9c1e..., train shard 1 of 3", for messages.
  std::string describe() const;
  // Adds the fields above to a file's metadata (overwriting "split" in place if present).
  void add_to(nlohmann::ordered_json& meta) const;
};

// A fresh dataset id: 16 random bytes as 32 lowercase hex characters.
std::string new_dataset_id();

// The manifest of one seal-data run, built before any file is written (each file's metadata holds
// the digest of the whole manifest), from every file's plaintext size and digest.
class DatasetManifest {
 public:
  DatasetManifest(std::string kind, std::string dataset_id);
  // Records the next file of `split` (indices 0, 1, ... in call order); returns its index. Throws
  // InputError on a split name that is not [a-z0-9]+.
  std::uint64_t add(const std::string& split, std::uint64_t bytes, const tee::Sha256Digest& sha256);
  // The text the digest covers (format above).
  std::string canonical() const;
  std::string digest_hex() const;
  // The binding of file `index` of `split` (which add() returned).
  DatasetBinding binding(const std::string& split, std::uint64_t index) const;
  const std::string& dataset_id() const { return id_; }

 private:
  struct Entry {
    std::string split;
    std::uint64_t index = 0;
    std::uint64_t bytes = 0;
    tee::Sha256Digest sha256{};
  };
  std::string kind_, id_;
  std::vector<Entry> entries_;
};

// Reads the binding out of a file's metadata, which the caller has authenticated (opened a chunk).
// Throws IntegrityError naming `file`: no binding at all ("sealed by an older teetrain; re-run
// `teetrain seal-data`"), or a field missing, of the wrong type or out of range.
DatasetBinding read_binding(const nlohmann::json& meta, const std::filesystem::path& file);

struct BoundFile {
  std::filesystem::path file;
  DatasetBinding binding;
};

// Checks the (authenticated) files loaded as `split`: each is of that split, all are of one dataset
// (id and manifest), each shard index appears once and none of 0..n-1 is missing. Returns the
// positions of `files` in shard order (so renaming shards within a split cannot reorder the data).
// Throws IntegrityError naming the offending file (or, for a missing shard, the split's place).
std::vector<std::size_t> check_split_files(const std::vector<BoundFile>& files, const std::string& split);

// Refuses (IntegrityError naming b's file) two splits of one run that come from different
// datasets, e.g. a validation split sealed by another seal-data run than the training split.
void check_same_dataset(const BoundFile& a, const BoundFile& b);

}  // namespace tt
