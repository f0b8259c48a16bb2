// Checkpoints: one directory per step holding the model (safetensors), the optimizer state
// (safetensors) and the run state (JSON: step, data position, seed, configuration). A step
// directory is written under a temporary name, every file fsynced, a COMPLETE marker written last,
// then renamed into place: a crash leaves either the old set of checkpoints or the new one, never
// a half checkpoint that looks whole. How bytes reach the disk (plain or sealed) is a FileCodec.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/model.h"
#include "engine/optimizer.h"

namespace tt {

// Stores and loads whole files; TEE mode seals them (tee/sealed_file), plain mode writes them as is.
class FileCodec {
 public:
  virtual ~FileCodec() = default;
  virtual std::string suffix() const = 0;  // appended to file names, e.g. ".sealed"
  // Writes `bytes` to `path` durably (fsync). `kind` is recorded in sealed headers (e.g. "model").
  virtual void write(const std::filesystem::path& path, std::span<const std::byte> bytes, const std::string& kind) = 0;
  virtual std::vector<std::byte> read(const std::filesystem::path& path) = 0;
};
std::unique_ptr<FileCodec> make_plain_codec();

struct CheckpointMeta {
  long step = 0;
  uint64_t samples_consumed = 0;  // run-wide data position (independent of the number of ranks)
  uint64_t seed = 0;
  std::string params_sha256;
  nlohmann::json config;  // model and run configuration, for checks on resume
};

class CheckpointStore {
 public:
  CheckpointStore(std::filesystem::path dir, int keep, FileCodec& codec);

  // Writes step_<step>/ atomically and prunes all but the newest `keep` complete checkpoints.
  std::filesystem::path save(Backend& backend, Model& model, Optimizer* optimizer, const CheckpointMeta& meta);

  // `path` is a step directory or a checkpoint root (then its newest complete step is used).
  static std::filesystem::path resolve(const std::filesystem::path& path);
  static std::vector<std::filesystem::path> complete_steps(const std::filesystem::path& root);

  // Loads parameters (and optimizer state when `optimizer` is non-null) and returns the meta.
  static CheckpointMeta load(const std::filesystem::path& step_dir, FileCodec& codec, Backend& backend, Model& model,
                             Optimizer* optimizer);
  static CheckpointMeta read_meta(const std::filesystem::path& step_dir, FileCodec& codec);

 private:
  std::filesystem::path dir_;
  int keep_;
  FileCodec& codec_;
};

// Model parameters as safetensors bytes (names and shapes from the model's parameter table).
std::vector<std::byte> encode_params_safetensors(Backend& backend, Model& model,
                                                 const std::map<std::string, std::string>& metadata);

}  // namespace tt
