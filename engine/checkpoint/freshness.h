// Emulated trusted monotonic storage against checkpoint rollback.
//
// The manifest chain (verified_checkpoint.h) catches swapped, renamed, edited and unlisted files,
// but a checkpoint directory that has been rolled back as a whole -- the newer steps deleted, an
// older GENUINE step left as the newest -- is self-consistent: nothing in it can show that it is
// stale. Excluding that needs state the attacker cannot roll back. A TEE would keep it in trusted
// monotonic storage (a TPM NV counter, a replay-protected memory block); here the key owner keeps a
// sealed freshness record beside the master key file:
//
//   <key-file>.freshness   sealed file (tee/crypto/sealed_file.h) under HKDF(master, "teetrain freshness"),
//                          metadata {"kind":"freshness"}; plaintext:
//   {"format": "teetrain-freshness/1",
//    "runs": {"<run_id>": {"step": 10, "manifest_sha256": "<64 hex>"}, ...}}
//
// Every save (rank 0, which holds the master key) records its lineage's newest step and the SHA-256
// of its manifest file, atomically (temporary file, fsync, rename) under an advisory lock. Resume
// and `ckpt verify --key-file` refuse a checkpoint of a lineage the record knows that is older than
// the newest step seen, or the same step with another manifest. A lineage the record does not know
// is accepted (and said so).
//
// What it rests on: the record is only as trustworthy as the storage of the key file itself. An
// attacker who can roll back the key owner's directory can roll back the record too; deleting the
// record (the owner's decision, e.g. to deliberately resume an older checkpoint) turns the check
// off for every lineage. A crash between a checkpoint's rename and the record update leaves the
// record one save behind (that newest checkpoint is still accepted: newer than the record is never
// refused). Plain mode has no key, hence no record: rolling back to an older genuine checkpoint is
// not detected there.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "engine/checkpoint/verified_checkpoint.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

// "<key-file>.freshness".
std::filesystem::path freshness_record_path(const std::filesystem::path& key_file);

class FreshnessRecord;
// What a resume from a checkpoint could not check, as one warning line; empty when `record` exists
// (then rollback was checked). Null `record`: a plain run, which keeps no record.
std::string rollback_warning(const FreshnessRecord* record);

struct FreshnessEntry {
  long step = 0;
  std::string manifest_sha256;
};

class FreshnessRecord {
 public:
  // `master_key` is the master key (key_file.h); only the derived freshness key is kept.
  FreshnessRecord(std::filesystem::path path, const tee::MasterKey& master_key);

  const std::filesystem::path& path() const { return path_; }
  bool exists() const;

  // The newest save of `run_id` the record has seen; nullopt for an unknown lineage or no record.
  // Throws IntegrityError when the record exists but does not open or parse.
  std::optional<FreshnessEntry> newest(const std::string& run_id) const;

  // Refuses (IntegrityError) a checkpoint older than what the record has seen of its lineage,
  // or the same step with another manifest; returns one report line otherwise.
  std::string check(const VerifiedCheckpoint& ck) const;

  // Records a save as its lineage's newest. Refuses (IntegrityError) to move a lineage back.
  void record(const std::string& run_id, long step, const std::string& manifest_sha256);

 private:
  std::filesystem::path path_;
  tee::FreshnessKey key_;
};

}  // namespace tt
