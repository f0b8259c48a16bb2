// The files of a checkpoint directory as formats: the manifest that binds them together and to
// their place, and the run state (state.json). Both parsers read untrusted bytes: anything
// malformed -- bad JSON, a missing field, a wrong type, a number out of range -- is a
// IntegrityError naming the file, never a crash or a raw JSON exception.
//
// manifest.json (plain mode) / manifest.json.sealed (TEE mode, sealed under the checkpoint key):
//
//   {"format": "teetrain-checkpoint-manifest/1",
//    "run_id": "<32 hex: the lineage id, drawn at a fresh start, inherited on --resume>",
//    "step": 10, "dir": "step_00000010",
//    "prev_step": 5 | null,                       // the lineage's previous save (null: the first)
//    "prev_manifest_sha256": "<64 hex>" | null,   // SHA-256 of that save's manifest file bytes
//    "files": [{"name": "model.safetensors.sealed", "size": 123, "sha256": "<64 hex>"}, ...]}
//
// "files" lists every other file of the directory except the COMPLETE marker (model, optimizer
// when present, state), with the size and SHA-256 of the bytes on disk (sealed bytes in TEE mode).
//
// A sharded checkpoint (--ckpt-layout sharded) has no optimizer.safetensors; each rank r of the run
// wrote its shard of the optimizer state as optimizer.rank<r>.safetensors (tensors m, v or momentum
// of shape [S_r], the floats of its ranges packed in order; metadata optimizer, rank, step), and the
// manifest, written by rank 0 once every rank's file was on disk and its size and digest gathered,
// lists them all and adds the layout they were cut by (Note [Shard layout], engine/gradients/shard.h):
//
//    "layout": {"world": 2, "stage": "optimizer", "params": 34688,
//               "shards": [[[17344, 17344]], [[0, 17344]]]}       (gpt2-tiny, one bucket)
//
// Note [Parameter shards in the optimizer shard's file]: at --shard params (ZeRO-3) no rank holds the
// whole parameters, so each rank's optimizer.rank<r>.safetensors also holds "params" [S_r], its
// parameter floats of the same ranges packed the same way, and model.safetensors holds the buffers alone
// and names the parameters (table order, shapes) in its metadata "param_table". One file per rank, not
// a sibling: its sealed header and metadata already bind it to its rank and step, and the manifest
// lists it, so a parameter shard swapped, from another step or truncated fails as an optimizer shard
// does, with no second file to keep consistent with the first. state.json's params_sha256 is still the
// whole parameters' digest (streamed bucket by bucket at the save); a reader that reads every shard
// reassembles model.safetensors exactly as the whole layout writes it (open_verified_checkpoint).
//
// "shards"[r] is rank r's ranges of the flat parameter buffer ([offset, count], in the order its state
// is packed). The parser checks that there are "world" of them, that together they cover [0, params)
// exactly once, and that the files are exactly model, state and one optimizer shard per rank.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/optimizer.h"
#include "engine/run_choices.h"

namespace tt {

inline constexpr const char* kCheckpointMarker = "COMPLETE";
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
inline constexpr const char* kStateFile = "state.json";
inline constexpr const char* kParamsShardTensor = "params";  // Note [Parameter shards in the ...]
inline constexpr const char* kParamTableKey = "param_table";
inline constexpr const char* kManifestFormat = "teetrain-checkpoint-manifest/1";
// No run gets near this; it keeps every step computation far from overflow.
inline constexpr long kMaxCheckpointStep = 1'000'000'000'000L;

struct CheckpointMeta {
  long step = 0;
  uint64_t samples_consumed = 0;  // run-wide data position (independent of the number of ranks)
  uint64_t seed = 0;
  std::string params_sha256;
  nlohmann::json config;  // model and run configuration, for checks on resume
  // Parameter floats at the start of the model file's data (buffers such as batch-norm statistics
  // follow them): what params_sha256 covers. Filled in by CheckpointStore::save.
  uint64_t param_floats = 0;
};

// "step_00000010": the directory name of a step (zero-padded, so names sort by step).
std::string step_dir_name(long step);
// The step a directory name stands for; nullopt unless it is step_<digits> within range.
std::optional<long> parse_step_dir_name(const std::string& name);

struct ManifestFile {
  std::string name;  // a file name inside the step directory, never a path
  std::uint64_t size = 0;
  std::string sha256;  // hex, of the bytes on disk
};

// Largest world a sharded manifest may name: it keeps the manifest's size and parse bounded.
inline constexpr int kMaxCheckpointShards = 4096;

// How a sharded checkpoint's optimizer state was cut: the world, the --shard stage, the number of
// parameter floats and each rank's ranges (Note [Shard layout]).
struct ShardLayout {
  int world = 0;
  ShardStage stage = ShardStage::None;
  std::uint64_t params = 0;
  std::vector<std::vector<ParamRange>> shards;  // (world,): rank r's ranges, in packing order

  std::uint64_t floats(int rank) const;  // the floats of rank `rank`'s ranges
};

// "optimizer.rank3.safetensors": rank `rank`'s optimizer shard (without the codec's suffix).
std::string optimizer_shard_file(int rank);
// The rank an optimizer shard's file name (".sealed" or not) stands for; nullopt for any other name.
std::optional<int> parse_optimizer_shard_file(const std::string& name);

struct CheckpointManifest {
  std::string run_id;
  long step = 0;
  std::string dir;
  std::optional<long> prev_step;
  std::optional<std::string> prev_manifest_sha256;
  std::vector<ManifestFile> files;
  std::optional<ShardLayout> layout;  // sharded checkpoints only

  const ManifestFile* find(const std::string& name) const;
};

// 16 random bytes as 32 hex characters: a fresh lineage id.
std::string new_run_id();

std::string encode_manifest(const CheckpointManifest& m);
// Checks the format tag, every field's type and range, that file names are the checkpoint's own
// (model/optimizer/state, all with or all without ".sealed"), listed once, model and state present;
// for a sharded one the layout, and one optimizer shard per rank in place of optimizer.safetensors.
CheckpointManifest parse_manifest(std::span<const std::uint8_t> bytes, const std::string& what);

// One rank's report of the optimizer shard it wrote ({"name","size","sha256"}), as the ranks of a
// sharded save send it to rank 0; the parser refuses anything but an optimizer shard's entry.
std::string encode_manifest_file(const ManifestFile& f);
ManifestFile parse_manifest_file(std::span<const std::uint8_t> bytes, const std::string& what);

std::string encode_checkpoint_state(const CheckpointMeta& m);
// state.json: step (0..kMaxCheckpointStep), samples_consumed, seed and param_floats (unsigned
// 64-bit), params_sha256 (64 hex), config (an object).
CheckpointMeta parse_checkpoint_state(std::span<const std::uint8_t> bytes, const std::string& what);

// Strict readers of untrusted JSON (IntegrityError naming `what`, never a JSON exception),
// shared with the freshness record.
namespace ckptjson {
nlohmann::json parse_object(std::span<const std::uint8_t> bytes, const std::string& what);
const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& what);
std::uint64_t get_u64(const nlohmann::json& j, const char* key, const std::string& what);
long get_step(const nlohmann::json& j, const char* key, const std::string& what);  // 0..kMaxCheckpointStep
std::string get_hex(const nlohmann::json& j, const char* key, std::size_t len, const std::string& what);
}  // namespace ckptjson

}  // namespace tt
