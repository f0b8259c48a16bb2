// Sealed token datasets (docs/design.md §7) and the loader that serves batches from them in TEE mode.
//
// At rest: `teetrain seal-data` turns each llm.c token shard "x.bin" into "x.bin.sealed", a sealed
// file whose plaintext is the unchanged shard bytes (1024-byte header + uint16 tokens) and whose
// clear, authenticated metadata is {"kind":"token-shard","name":"x.bin","tokens":N,"vocab":V} plus
// the dataset binding of data/dataset_binding.h ("dataset", "split", "shard", "shards", "splits",
// "manifest"): one seal-data run is one dataset, the split comes from the file name
// (<prefix>_<split>.bin or <prefix>_<split>_*.bin) and shards are numbered in name order within
// their split. The files are sealed under the dataset key (engine/keys/key_file.h: derive_dataset_key),
// never under the master key.
//
// In training: SealedTokenLoader serves exactly the batches TokenLoader serves for the same data,
// T and seed (same windows, same epoch permutations; see data/token_loader.h), but reads each
// window's bytes out of the sealed file on demand, opening only the chunks the window touches, and
// moves the batch into the rank by the ingress mode of data/sealed_ingress.h.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/profiler.h"
#include "data/dataset_binding.h"
#include "data/sealed_blob.h"
#include "data/sealed_ingress.h"
#include "data/window_order.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/sealed_file.h"

namespace tt {

inline constexpr const char* kSealedSuffix = ".sealed";
inline constexpr const char* kTokenShardKind = "token-shard";

// ---- sealing (teetrain seal-data) ----

// The plain shards `spec` names, for sealing every split at once: an existing file; a glob on the
// file name; a directory (all its *.bin); or a prefix ("data-cache/fortunes" -> fortunes_*.bin).
// Throws InputError if nothing matches.
std::vector<std::filesystem::path> list_token_shards(const std::string& spec);

struct SealedShardInfo {
  std::filesystem::path input;
  std::filesystem::path output;  // <out_dir>/<input file name>.sealed
  std::uint64_t tokens = 0;
  int vocab = 0;  // recorded vocabulary (0 = not recorded: GPT-2's)
  std::uint64_t chunks = 0;
  DatasetBinding binding;  // written into the file's metadata
};

// The split a shard's file name puts it in, as the loaders look for it ("<prefix>_<split>.bin" or
// "<prefix>_<split>_*.bin", split train or val), and the prefix. Throws InputError if the name fits
// neither split or both.
struct ShardName {
  std::string prefix, split;
};
ShardName token_shard_name(const std::filesystem::path& file);

// Validates each shard (read_token_shard: InputError on a malformed one), refuses inputs of several
// datasets (prefixes) or with no split in their name, and seals the bytes, unchanged, into out_dir
// (created if missing) as one dataset: a fresh dataset id and the manifest of all inputs bound into
// every file (data/dataset_binding.h). Each output appears atomically.
std::vector<SealedShardInfo> seal_token_shards(const std::vector<std::filesystem::path>& inputs,
                                               const std::filesystem::path& out_dir,
                                               const tee::DatasetKey& dataset_key, tee::Cipher cipher,
                                               std::uint32_t chunk_size = tee::kDefaultSealChunkSize);

// ---- finding sealed data, refusing plain data in TEE mode ----

// Resolves `spec` like TokenDataset::open, but to sealed shards: an existing sealed file; a glob;
// a directory (its *_<split>.bin.sealed and *_<split>_*.bin.sealed); or a prefix
// ("<spec>_<split>.bin.sealed", "<spec>_<split>_*.bin.sealed"). Empty if none.
std::vector<std::filesystem::path> find_sealed_shards(const std::string& spec, const std::string& split);

// True iff `spec` names sealed shards for `split`. For TEE mode: when it names plain data and
// allow_plain is false, throws InputError ("plain shards refused in TEE mode; ..."); with
// allow_plain it returns false and the caller loads plain data with TokenDataset.
bool require_sealed_data(const std::string& spec, const std::string& split, bool allow_plain);
// Throws the InputError above: `spec` names plain shards where TEE mode wants sealed ones.
[[noreturn]] void refuse_plain_shards(const std::string& spec);

// True iff `path` is a regular file that starts with the sealed-file magic.
bool is_sealed_file(const std::filesystem::path& path);

// ---- reading ----

// Sealed shards of one split opened for reading. Construction opens every file (checks the key
// fingerprint) and the chunk holding each shard's 1024-byte header, which authenticates the file's
// metadata, then checks the dataset binding (data/dataset_binding.h: check_split_files) and orders
// the shards by their authenticated index; tokens are read on demand. Not thread-safe.
class SealedTokenDataset {
 public:
  // Throws InputError (missing file, not a token shard, malformed shard, mixed vocabularies) or
  // IntegrityError (wrong key, tampered header chunk; a file of another split, dataset or
  // without a binding, a duplicated or missing shard), naming the file.
  SealedTokenDataset(const std::vector<std::filesystem::path>& files, const std::string& split,
                     const tee::DatasetKey& dataset_key, Profiler* profiler = nullptr);
  static SealedTokenDataset open(const std::string& spec, const std::string& split,
                                 const tee::DatasetKey& dataset_key, Profiler* profiler = nullptr);
  // Another split of `first`'s dataset at `spec` (e.g. "val" next to the training split), checked to
  // be of the same dataset. Null when `spec` finds no such files and the dataset has no such split,
  // or when it finds exactly `first`'s files (`spec` names files, not a split). Throws
  // IntegrityError when the dataset has the split but no file of it is found.
  static std::unique_ptr<SealedTokenDataset> open_other_split(const std::string& spec,
                                                              const std::string& split,
                                                              const SealedTokenDataset& first,
                                                              const tee::DatasetKey& dataset_key,
                                                              Profiler* profiler = nullptr);

  std::size_t num_shards() const { return shards_.size(); }
  std::uint64_t shard_tokens(std::size_t i) const { return shards_[i].tokens; }
  // Shard i in authenticated index order, and the dataset binding (of shard 0).
  const std::filesystem::path& shard_file(std::size_t i) const { return shards_[i].reader->path(); }
  const DatasetBinding& binding() const { return shards_.front().binding; }
  int vocab() const { return vocab_; }
  std::uint64_t num_tokens() const;
  // "data/fortunes_train.bin.sealed (sealed, 2.3M tokens, vocab 256, manifest <64 hex>)"
  std::string describe() const;

  // Copies the little-endian bytes of tokens [first, first + count) of shard `shard` into `out`
  // (out.size() == 2 * count). Opens only the chunks they lie in.
  void read_token_bytes(std::size_t shard, std::uint64_t first, tee::MutableByteView out);

 private:
  struct Shard {
    std::unique_ptr<SealedBlobReader> reader;  // a reader is not movable; the dataset is
    std::uint64_t tokens = 0;
    int vocab = 0;
    DatasetBinding binding;
  };
  // Opens one file: authenticates its header (chunk 0), parses kind, binding and shard header.
  static Shard open_shard(const std::filesystem::path& file, const tee::DatasetKey& dataset_key,
                          Profiler* profiler);
  std::vector<Shard> shards_;
  int vocab_ = 0;
};

// TokenLoader's sample stream over a SealedTokenDataset, with sealed ingress. Keeps a reference to
// the dataset (which must outlive it, and which it reads through: one loader per dataset).
class SealedTokenLoader {
 public:
  static constexpr uint64_t kDataStream =
      WindowOrder::kDataStream;  // "data": must equal TokenLoader::kDataStream

  // Throws InputError if T < 1 or the data holds no window of T+1 tokens.
  // `bounce_buffer`: the bounce path's shared memory (null: plain memory; a test's tampering host).
  SealedTokenLoader(SealedTokenDataset& data, int T, uint64_t seed, bool shuffle, IngressOptions ingress = {},
                    Profiler* profiler = nullptr, std::unique_ptr<BounceBuffer> bounce_buffer = nullptr);
  SealedTokenLoader(SealedTokenDataset&&, int, uint64_t, bool, IngressOptions = {},
                    Profiler* = nullptr) = delete;

  uint64_t num_windows() const { return num_windows_; }
  int seq_len() const { return T_; }
  uint64_t window_of(uint64_t g);

  // As TokenLoader::fill: out.tokens (B, T), out.targets (B, T) for samples
  // [first_sample, first_sample + count). Time goes to Phase::Ingress.
  void fill(Batch& out, uint64_t first_sample, int count);

 private:
  SealedTokenDataset& data_;
  int T_;
  Profiler* profiler_;
  uint64_t num_windows_ = 0;
  std::vector<uint64_t> shard_first_window_;  // (num_shards + 1) prefix sums of windows per shard
  WindowOrder order_{0, 0, false};            // set once num_windows_ is known
  std::optional<BounceLink> bounce_;
  IngressThrottle throttle_;
  std::vector<std::uint8_t> staging_;  // (B, T+1) uint16 little-endian: the windows as stored
};

}  // namespace tt
