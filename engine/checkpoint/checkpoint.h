// Checkpoints: one directory per step holding the model (safetensors), the optimizer state
// (safetensors), the run state (JSON: step, data position, seed, configuration) and the manifest
// that binds them to each other, to the directory's name and to the lineage's previous checkpoint
// (checkpoint_manifest.h). A step directory is written under a temporary name, every file fsynced,
// a COMPLETE marker written last, then renamed into place: a crash leaves either the old set of
// checkpoints or the new one, never a half checkpoint that looks whole. How bytes reach the disk
// (plain or sealed) is a FileCodec; every read goes through open_verified_checkpoint.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/warning.h"
#include "core/backend.h"
#include "core/model.h"
#include "engine/checkpoint/checkpoint_manifest.h"
#include "engine/checkpoint/verified_checkpoint.h"
#include "engine/optimizer.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

class FreshnessRecord;

// Writes whole files; TEE mode seals them (tee/crypto/sealed_file), plain mode writes them as is.
class FileCodec {
 public:
  virtual ~FileCodec() = default;
  virtual std::string suffix() const = 0;  // appended to file names, e.g. ".sealed"
  // Writes `bytes` to `path` durably (fsync). `kind` is recorded in sealed headers (e.g. "model"), and
  // `step` where given (a rank's optimizer shard: its header names its rank, by the file name, and step).
  virtual void write(const std::filesystem::path& path, std::span<const std::byte> bytes,
                     const std::string& kind, std::optional<long> step) = 0;
  // The key reads open sealed files with (open_verified_checkpoint); null for plain checkpoints.
  virtual const tee::CheckpointKey* key() const = 0;
};
std::unique_ptr<FileCodec> make_plain_codec();

// What the ranks of a sharded save wrote: the layout and each rank's optimizer shard entry, by rank.
struct ShardedSave {
  ShardLayout layout;
  std::vector<ManifestFile> files;  // (world,)
};

class CheckpointStore {
 public:
  // A fresh lineage (a new random run_id) unless continue_lineage() is called. `freshness`, when
  // set (rank 0 in TEE mode: the holder of the master key), records every save (freshness.h).
  // `warn` gets one line per directory entry that pruning leaves alone. Refuses (InputError) a
  // directory it cannot create or write in, before any training step is spent.
  CheckpointStore(std::filesystem::path dir, int keep, FileCodec& codec, FreshnessRecord* freshness = nullptr,
                  WarnFn warn = {});

  // After a resume: keep the checkpoint's run_id and chain the next save to its manifest.
  void continue_lineage(const VerifiedCheckpoint& from);
  const std::string& run_id() const { return run_id_; }

  // Writes step_<step>/ atomically (files, manifest, COMPLETE marker, rename), records it in the
  // freshness record, then prunes the lineage's verified saves beyond the newest `keep` (Note
  // [Pruning only verified checkpoints], checkpoint_lineage.h). A step directory already there is
  // replaced only if it is this lineage's; anything else is moved aside, never deleted.
  // Sharded (`shards` given): the files of begin_save's directory are every rank's optimizer shard,
  // listed as each rank reported it; `optimizer` is then null (no whole optimizer file). At --shard
  // params they hold the parameters too: the model file then holds the buffers alone, and
  // meta.params_sha256 must be given (GradReducer::streamed_params_sha256).
  std::filesystem::path save(Backend& backend, Model& model, Optimizer* optimizer, const CheckpointMeta& meta,
                             const ShardedSave* shards = nullptr);

  // A sharded save (--ckpt-layout sharded) spans the ranks: rank 0 opens the step's temporary
  // directory (begin_save) and shares its path, every rank writes its optimizer shard into it
  // (write_optimizer_shard) and reports the entry, and rank 0 completes it (save with every entry).
  std::filesystem::path begin_save(long step);
  // At --shard params `params` names the model and this rank's ranges: their floats go in the same file.
  struct ParamShard {
    Model& model;
    const std::vector<ParamRange>& ranges;
  };
  static ManifestFile write_optimizer_shard(FileCodec& codec, const std::filesystem::path& tmp,
                                            Backend& backend, Optimizer& optimizer, int rank, long step,
                                            const ParamShard* params = nullptr);

  // `path` is a step directory or a checkpoint root (then its newest complete step is used). `flag`
  // is the option the user gave it with, which the error names (`sample --ckpt`, `train --resume`).
  static std::filesystem::path resolve(const std::filesystem::path& path,
                                       const std::string& flag = "--resume");
  static std::vector<std::filesystem::path> complete_steps(const std::filesystem::path& root);

  // Loads parameters (and optimizer state when `optimizer` is non-null) from a verified checkpoint
  // (VerifyScope::Full), checks that the loaded parameters hash to its params_sha256, returns the
  // meta. With `freshness` (the key owner: rank 0 in TEE mode), a rollback past the freshness record
  // is refused first (IntegrityError), before anything is loaded.
  static CheckpointMeta load(const VerifiedCheckpoint& ck, Backend& backend, Model& model,
                             Optimizer* optimizer, const FreshnessRecord* freshness = nullptr);
  // open_verified_checkpoint(step_dir, codec.key()) and the above: resume's whole read path.
  static CheckpointMeta load(const std::filesystem::path& step_dir, FileCodec& codec, Backend& backend,
                             Model& model, Optimizer* optimizer, const FreshnessRecord* freshness = nullptr);
  // This rank's optimizer shard of a sharded checkpoint into `optimizer` (whose shard is that rank's
  // ranges: VerifiedCheckpoint::own_shard), after load() took the model.
  static void load_own_shard(const VerifiedCheckpoint& ck, Backend& backend, Optimizer& optimizer, int rank);
  // At --shard params, a rank reading its own shard (VerifiedCheckpoint::own_shard): the buffers and
  // its parameter ranges, no more; the caller gathers the rest and checks params_sha256 then. Refuses a
  // rollback as load() does.
  static CheckpointMeta load_own_params(const VerifiedCheckpoint& ck, Backend& backend, Model& model,
                                        int rank, const FreshnessRecord* freshness = nullptr);
  // The verified run state alone (VerifyScope::State: manifest and state.json).
  static CheckpointMeta read_meta(const std::filesystem::path& step_dir, FileCodec& codec);

 private:
  std::filesystem::path tmp_dir(long step) const;
  void make_room(const std::filesystem::path& final_dir);
  void prune(long step, const std::string& manifest_sha256);
  void warn_once(const std::filesystem::path& entry, const std::string& why);

  std::filesystem::path dir_;
  int keep_;
  FileCodec& codec_;
  FreshnessRecord* freshness_;
  std::string run_id_;
  std::optional<long> prev_step_;  // the lineage's last save, which the next one chains to
  std::optional<std::string> prev_manifest_sha256_;
  WarnFn warn_;
  std::set<std::string> warned_;  // entries already warned about: one line each per run
};

// Model parameters as safetensors bytes (names and shapes from the model's parameter table).
std::vector<std::byte> encode_params_safetensors(Backend& backend, Model& model,
                                                 const std::map<std::string, std::string>& metadata);

// At --shard params with sharded saves: the buffers, and the parameter table in the metadata.
std::vector<std::byte> encode_buffers_safetensors(Backend& backend, Model& model);

}  // namespace tt
