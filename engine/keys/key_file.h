// Master key files. The purpose keys derived from them are tee/crypto/purpose_keys.h's.
//
// A key file holds exactly 32 random bytes (raw, not hex), readable by its owner only (mode 0600).
// `teetrain keygen --out FILE` creates one; `--key-file FILE` loads it. The master key itself never
// seals anything: each use gets its own key through HKDF-SHA256 (tee::derive_dataset_key,
// derive_checkpoint_key, derive_freshness_key), so a dataset sealed by one run and a checkpoint
// written by another never share a key, and releasing the dataset key to a rank (after attestation)
// does not release the checkpoint key. The freshness key is the key owner's anti-rollback record's
// (engine/checkpoint/freshness.h), never released.
//
// Keys are never printed; SecretBytes::fingerprint() is what messages may show.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "base/warning.h"
#include "tee/crypto/purpose_keys.h"

namespace tt {

inline constexpr std::size_t kMasterKeySize = 32;

// Writes a fresh 32-byte random key to `path` with mode 0600 and returns its fingerprint (safe to
// print). Refuses (InputError) to replace an existing file unless `force`; the file appears
// atomically (temporary file, fsync, then link or rename), so a crash never leaves a short key.
std::string create_key_file(const std::filesystem::path& path, bool force = false);

// What a key file is loaded for, which decides what a missing one's message advises: sealed data and
// checkpoints open only under the key they were sealed with (a new key from `keygen` cannot open
// them), so only sealing something new may start from `teetrain keygen`.
enum class KeyUse {
  OpenSealed,  // open data or checkpoints sealed earlier: the data owner's key
  SealNew,     // seal new data (`seal-data`): any key, keygen makes one
  TrainSealed  // a TEE training run: new sealed checkpoints, or resuming ones sealed earlier
};

// Loads a master key. Throws InputError naming the path when the file is missing (advice for `use`,
// and the name of a similarly spelled file beside it), is not a regular file, or is not exactly 32
// bytes. Calls `warn` (if set) with one line when permissions are wider than 0600: a warning, not an
// error, since the user may have reasons (e.g. a tmpfs inside a confidential VM).
tee::MasterKey load_key_file(const std::filesystem::path& path, const WarnFn& warn = {},
                             KeyUse use = KeyUse::OpenSealed);
// The message load_key_file throws for a key file that is not there.
std::string missing_key_file(const std::filesystem::path& path, KeyUse use);

}  // namespace tt
