#include "engine/checkpoint/checkpoint_lineage.h"

#include "base/error.h"
#include "engine/checkpoint/verified_checkpoint.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 20;  // as open_verified_checkpoint

}  // namespace

std::optional<ReadManifest> read_step_manifest(const fs::path& step_dir, const tee::CheckpointKey* key,
                                               std::string& why) {
  const fs::path path = step_dir / (std::string(kManifestFile) + (key != nullptr ? ".sealed" : ""));
  try {
    const CheckedFile f = read_checkpoint_file(path, key, kMaxManifestBytes);
    ReadManifest out{parse_manifest(f.plain, path.string()), f.sha256};
    if (out.manifest.dir != step_dir.filename().string()) {
      why = "its manifest was written for " + out.manifest.dir;
      return std::nullopt;
    }
    return out;
  } catch (const Error& e) {  // InputError, IntegrityError, RunError: all "not verified", in words
    why = e.what();
    return std::nullopt;
  }
}

std::vector<fs::path> verified_lineage(const fs::path& root, const std::string& run_id, long step,
                                       const std::string& manifest_sha256, const tee::CheckpointKey* key) {
  std::vector<fs::path> out;
  std::optional<long> at = step;
  std::optional<std::string> digest = manifest_sha256;
  while (at && digest) {
    const fs::path dir = root / step_dir_name(*at);
    std::string why;
    const std::optional<ReadManifest> m = read_step_manifest(dir, key, why);
    // The digest is the link: bytes that hash to what the newer, verified manifest recorded.
    if (!m || m->sha256 != *digest || m->manifest.run_id != run_id || m->manifest.step != *at) break;
    out.push_back(dir);
    // Steps strictly decrease along a chain, so the walk ends even on a crafted one.
    if (m->manifest.prev_step && *m->manifest.prev_step >= *at) break;
    at = m->manifest.prev_step;
    digest = m->manifest.prev_manifest_sha256;
  }
  return out;
}

}  // namespace tt
