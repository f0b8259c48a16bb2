// The one read path for checkpoints: resume (CheckpointStore::load), `teetrain ckpt verify` and
// `ckpt export` all open a step directory through open_verified_checkpoint, so what one accepts
// the others accept, and what one refuses the others refuse.
//
// Checks, in order (any failure is a IntegrityError naming the file, and the chunk for a
// sealed chunk; a missing or unusable directory is an InputError):
//   - the COMPLETE marker is present;
//   - the manifest is present (manifest.json.sealed when a key is given, else manifest.json),
//     opens, and parses (checkpoint_manifest.h);
//   - the manifest's directory name is the directory's actual name, and its step is the name's step
//     and state.json's step (a renamed or moved step directory fails);
//   - every listed file exists with the recorded size and SHA-256 of its bytes on disk (a file from
//     another step, even another genuine sealed one, fails), and nothing else is in the directory;
//   - a key given, or a name ending in ".sealed", requires sealed bytes: plaintext is refused (a key
//     given and a plaintext manifest is refused too); every chunk opens; sealed headers name the file;
//   - the safetensors files parse, and the model's parameters hash to state.json's params_sha256;
//   - sharded: each optimizer shard read names its own rank and the manifest's step in its metadata
//     and holds, per slot, exactly the floats of that rank's ranges in the manifest's layout; at
//     --shard params a parameter shard too ("params"), and when every shard is read the whole model
//     reassembled from them is what the digest above covers (Note [Parameter shards in the optimizer
//     shard's file], checkpoint_manifest.h); a reader of its own shard alone checks it after gathering;
//   - chain: when the lineage's previous save (prev_step) is present beside the directory and
//     belongs to the same lineage, the SHA-256 of its manifest file equals prev_manifest_sha256.
//
// Each file is read from disk exactly once; its digest and its content come from the same bytes
// (sealed files are opened from a private in-memory copy), so storage that answers a second read
// differently gains nothing.
//
// What this cannot see on its own: a checkpoint replaced by an OLDER genuine one of the same
// lineage with its newer successors deleted (rollback). freshness.h closes that with the key
// owner's freshness record. Without a key (plain mode) nothing is authenticated: an attacker who
// rewrites the manifest consistently passes; the checks still catch mix-ups and partial edits.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_manifest.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

struct VerifiedCheckpoint {
  std::filesystem::path dir;
  std::filesystem::path manifest_path;
  CheckpointManifest manifest;
  std::string manifest_sha256;  // hex SHA-256 of the manifest file's bytes on disk
  CheckpointMeta meta;          // state.json
  // Plaintext model.safetensors (empty for VerifyScope::State); at --shard params, reassembled from
  // every shard when all were read, else the file as is (the buffers alone).
  std::vector<std::uint8_t> model;
  std::vector<std::uint8_t> optimizer;  // plaintext optimizer.safetensors (empty if none, or State)
  // A sharded checkpoint's optimizer.rank<r>.safetensors, plaintext, by rank (empty: not read).
  std::vector<std::vector<std::uint8_t>> shards;
  bool own_shard = false;  // only the wanted rank's shard was read: its ranges are the reader's
  bool sealed = false;
  std::string report;  // one line per file and check, indented two spaces
  int files = 0;       // files read and checked (the manifest included)
  std::uint64_t chunks = 0;
};

// Full: everything above. State: the manifest and state.json only (the configuration a tool needs
// before it can build a model); the directory listing, sizes and names are still checked.
enum class VerifyScope { Full, State };

// A rank resuming a sharded checkpoint: its rank and shard ranges (Note [Shard layout]). When the
// checkpoint's layout gives that rank the same ranges, only its own optimizer shard is read (the
// others' sizes are still checked); otherwise every shard is read, to be resharded.
struct ShardWant {
  int rank = 0;
  std::vector<ParamRange> ranges;
};

// `key` is the checkpoint key (key_file.h: derive_checkpoint_key), or null for a plain checkpoint.
// Every optimizer shard of a sharded checkpoint is read unless `want` says which one is needed. Each
// one read must name its rank and the checkpoint's step and hold its ranges' floats per slot.
VerifiedCheckpoint open_verified_checkpoint(const std::filesystem::path& step_dir,
                                            const tee::CheckpointKey* key,
                                            VerifyScope scope = VerifyScope::Full,
                                            const ShardWant* want = nullptr);

// One file of a checkpoint, read once: digest and size of the bytes on disk, and the plaintext.
struct CheckedFile {
  std::vector<std::uint8_t> plain;
  std::uint64_t size = 0;
  std::string sha256;
  std::uint64_t chunks = 0;     // sealed chunks opened; 0 for a plain file
  std::string sealed_metadata;  // the sealed header's metadata (authenticated once the chunks opened)
};

// Reads `path` (at most `max_size` bytes on disk, else IntegrityError). Sealed bytes need `key`
// (InputError without); plaintext is refused when `key` is given or the name ends in ".sealed".
CheckedFile read_checkpoint_file(const std::filesystem::path& path, const tee::CheckpointKey* key,
                                 std::uint64_t max_size);

}  // namespace tt
