// Which checkpoints in a directory belong to a run, verified: what `--keep` may delete and what a
// re-save of the same step may replace.
//
// Note [Pruning only verified checkpoints]: the checkpoint directory belongs to whoever owns the
// disk, so anything may lie in it: a planted `step_99999999/COMPLETE`, garbage under a step name,
// another run's genuine checkpoints. A name and a COMPLETE marker prove nothing, and counting them
// let one empty planted directory make `--keep` delete every genuine checkpoint. So pruning deletes
// only the lineage's own saves, found by walking its hash chain back from the save this process has
// just written: each older link is the directory `prev_step` names whose manifest file hashes to the
// `prev_manifest_sha256` the newer (already verified) manifest records, opens (sealed: under the
// checkpoint key), names its own directory and carries this run's id. The chain's anchor is bytes we
// wrote ourselves, so this holds in plain mode too, where nothing else is authenticated. Everything
// not on the chain is left where it is, with one warning line per directory.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_manifest.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

// A manifest read back from a step directory, with the SHA-256 of its bytes on disk.
struct ReadManifest {
  CheckpointManifest manifest;
  std::string sha256;
};

// The manifest of `step_dir` if it opens (under `key` when given: the sealed manifest), parses and
// names `step_dir`; nullopt, with `why` set, for anything else (missing, not authentic, malformed,
// written for another directory). Never throws for what lies on disk.
std::optional<ReadManifest> read_step_manifest(const std::filesystem::path& step_dir,
                                               const tee::CheckpointKey* key, std::string& why);

// The step directories of `run_id`'s lineage in `root`, newest first, reachable from the save
// (`step`, `manifest_sha256`) by the manifests' hash chain (Note [Pruning only verified checkpoints]).
// The walk stops at the first link that is missing or does not verify.
std::vector<std::filesystem::path> verified_lineage(const std::filesystem::path& root,
                                                    const std::string& run_id, long step,
                                                    const std::string& manifest_sha256,
                                                    const tee::CheckpointKey* key);

}  // namespace tt
