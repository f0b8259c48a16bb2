// `teetrain ckpt inspect | verify | export`: look into, check and export checkpoints, plain or sealed.
//
// `path` may be a step directory (step_XXXXXXXX/) or a checkpoint root holding several. Keys are
// never printed: only the key fingerprints the sealed headers carry. The key these functions take is
// the checkpoint key (derive_checkpoint_key of the master key), or null when none was given.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

class FreshnessRecord;

// Human-readable description, no key needed: per file, plain or sealed; for sealed files the clear
// header (magic, version, cipher, key fingerprint, chunk size and count, plaintext length, metadata:
// unauthenticated until verified); for plain safetensors the tensor list summary; the step from
// state.json and the run, step and previous save from the manifest (plain, or sealed when `key` is
// given) and the COMPLETE marker. A root lists every step directory in it, complete or not. Nothing
// shown is verified. Throws InputError if `path` does not exist.
std::string inspect_checkpoint(const std::filesystem::path& path, const tee::CheckpointKey* key = nullptr);

struct VerifyReport {
  std::string text;          // one line per file checked, and a verdict per step
  int steps = 0;             // step directories verified
  int files = 0;             // files checked
  std::uint64_t chunks = 0;  // sealed chunks opened
};

// Checks every complete step directory under `path` (or the one step directory `path`) with
// open_verified_checkpoint (verified_checkpoint.h: marker, manifest, names, sizes, digests, sealed
// chunks, parses, params digest, chain to the previous save). A sealed checkpoint needs `key`
// (InputError otherwise). With `freshness`, the newest checkpoint of each run found -- the one a
// resume would take -- must not be older than the freshness record has seen (freshness.h); older
// saves of the same run beside it are its history. Throws IntegrityError on the first failure
// (naming the file, and the chunk for sealed files); returns the report when all pass.
VerifyReport verify_checkpoint(const std::filesystem::path& path, const tee::CheckpointKey* key = nullptr,
                               const FreshnessRecord* freshness = nullptr);

struct ExportResult {
  std::filesystem::path step_dir;  // the step exported (the newest complete one for a root)
  std::size_t tensors = 0;
  std::uint64_t params = 0;  // floats
  std::string text;          // one line for the terminal
};

// Writes the model of a checkpoint as a plaintext safetensors file at `out_path` (atomically), byte
// for byte the model.safetensors a plain checkpoint holds, loadable by safetensors/PyTorch
// (safetensors.torch.load_file). A sealed model needs `key`. The checkpoint is verified as a resume
// verifies it (open_verified_checkpoint, and `freshness` when given) before anything is written.
ExportResult export_safetensors(const std::filesystem::path& path, const tee::CheckpointKey* key,
                                const std::filesystem::path& out_path,
                                const FreshnessRecord* freshness = nullptr);

}  // namespace tt
