// `teetrain ckpt inspect | verify | export`: look into, check and export checkpoints, plain or sealed.
//
// `path` may be a step directory (step_XXXXXXXX/) or a checkpoint root holding several. Keys are
// never printed: only the key fingerprints the sealed headers carry. The key these functions take is
// the checkpoint key (derive_checkpoint_key of the master key), or null when none was given.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "tee/secure_bytes.h"

namespace tt {

// Human-readable description, no key needed: per file, plain or sealed; for sealed files the clear
// header (magic, version, cipher, key fingerprint, chunk size and count, plaintext length, metadata:
// unauthenticated until verified); for plain safetensors the tensor list summary; the step from
// state.json (plain, or sealed when `key` is given) and from the COMPLETE marker. A root lists
// every step directory in it, complete or not. Throws InputError if `path` does not exist.
std::string inspect_checkpoint(const std::filesystem::path& path, const tee::SecretBytes* key = nullptr);

struct VerifyReport {
  std::string text;          // one line per file checked, and a verdict per step
  int steps = 0;             // step directories verified
  int files = 0;             // files checked
  std::uint64_t chunks = 0;  // sealed chunks opened
};

// Checks every complete step directory under `path` (or the one step directory `path`): the COMPLETE
// marker, every chunk of every sealed file (needs `key`: InputError otherwise), that each
// safetensors file parses, that state.json parses and names the directory's step, and that the
// model's parameters hash to state.json's params_sha256. Throws tee::IntegrityError on the first
// failure (naming the file, and the chunk for sealed files); returns the report when all pass.
VerifyReport verify_checkpoint(const std::filesystem::path& path, const tee::SecretBytes* key = nullptr);

struct ExportResult {
  std::filesystem::path step_dir;  // the step exported (the newest complete one for a root)
  std::size_t tensors = 0;
  std::uint64_t params = 0;  // floats
  std::string text;          // one line for the terminal
};

// Writes the model of a checkpoint as a plaintext safetensors file at `out_path` (atomically), byte
// for byte the model.safetensors a plain checkpoint holds, loadable by safetensors/PyTorch
// (safetensors.torch.load_file). A sealed model needs `key`. The file is verified (every chunk,
// parse, params digest against state.json) before anything is written.
ExportResult export_safetensors(const std::filesystem::path& path, const tee::SecretBytes* key,
                                const std::filesystem::path& out_path);

}  // namespace tt
