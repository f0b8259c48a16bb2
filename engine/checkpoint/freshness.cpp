#include "engine/checkpoint/freshness.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/hex.h"
#include "engine/file_util.h"
#include "engine/keys/key_file.h"
#include "tee/crypto/sealed_file.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "teetrain-freshness/1";
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{16} << 20;  // ~100k lineages

using Runs = std::map<std::string, FreshnessEntry>;

Runs parse_record(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  const nlohmann::json j = ckptjson::parse_object(bytes, what);
  const nlohmann::json& format = ckptjson::field(j, "format", what);
  if (!format.is_string() || format.get<std::string>() != kFormat)
    throw IntegrityError(what + ": not a freshness record (format is not " + kFormat + ")");
  const nlohmann::json& runs = ckptjson::field(j, "runs", what);
  if (!runs.is_object()) throw IntegrityError(what + ": field 'runs' is not an object");
  Runs out;
  for (const auto& [run_id, e] : runs.items()) {
    if (!is_hex(run_id, 32)) throw IntegrityError(what + ": a run id is not 32 hex digits");
    if (!e.is_object()) throw IntegrityError(what + ": run " + run_id + " is not an object");
    out[run_id] = {ckptjson::get_step(e, "step", what), ckptjson::get_hex(e, "manifest_sha256", 64, what)};
  }
  return out;
}

std::vector<std::uint8_t> encode_record(const Runs& runs) {
  nlohmann::json r = nlohmann::json::object();
  for (const auto& [id, e] : runs) r[id] = {{"step", e.step}, {"manifest_sha256", e.manifest_sha256}};
  const std::string text = nlohmann::json({{"format", kFormat}, {"runs", r}}).dump(1) + "\n";
  return {text.begin(), text.end()};
}

}  // namespace

fs::path freshness_record_path(const fs::path& key_file) {
  return key_file.string() + ".freshness";
}

FreshnessRecord::FreshnessRecord(fs::path path, const tee::MasterKey& master_key)
    : path_(std::move(path)), key_(tee::derive_freshness_key(master_key)) {}

std::string rollback_warning(const FreshnessRecord* record) {
  if (record == nullptr)
    return "rollback not checked: plain checkpoints (--tee off) have no freshness record, so an older "
           "checkpoint of this run resumes as well as the newest";
  if (record->exists()) return "";
  return "rollback not checked: no freshness record at " + tee::printable_path(record->path()) +
         " (it is written beside the key file by every sealed save), so an older genuine checkpoint of "
         "this run resumes as well as the newest";
}

bool FreshnessRecord::exists() const {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path_, ec));
}

std::optional<FreshnessEntry> FreshnessRecord::newest(const std::string& run_id) const {
  if (!exists()) return std::nullopt;
  const std::uint64_t size = tee::open_regular_file(path_, "freshness record").size;  // a FIFO: exit 2
  if (size > kMaxRecordBytes) throw IntegrityError(path_.string() + ": not a freshness record (size)");
  const Runs runs = parse_record(tee::read_sealed_file(path_, key_), path_.string());
  const auto it = runs.find(run_id);
  if (it == runs.end()) return std::nullopt;
  return it->second;
}

std::string FreshnessRecord::check(const VerifiedCheckpoint& ck) const {
  const std::string dir = ck.dir.string();
  if (!exists()) return "  freshness: no record at " + path_.string() + " (rollback not checked)\n";
  const std::optional<FreshnessEntry> seen = newest(ck.manifest.run_id);
  if (!seen)
    return "  freshness: run " + ck.manifest.run_id + " unknown to " + path_.string() + " (accepted)\n";
  const std::string steps = "step " + std::to_string(ck.manifest.step);
  if (ck.manifest.step < seen->step) {
    throw IntegrityError("rollback: " + dir + " is " + steps + " but the freshness record (" +
                         path_.string() + ") has seen step " + std::to_string(seen->step) + " of this run");
  }
  if (ck.manifest.step == seen->step && ck.manifest_sha256 != seen->manifest_sha256) {
    throw IntegrityError("rollback: " + dir + " is " + steps + " of this run, but not the " + steps +
                         " the freshness record (" + path_.string() + ") has seen (different manifest)");
  }
  if (ck.manifest.step > seen->step)
    return "  freshness: " + steps + " is newer than the record's step " + std::to_string(seen->step) +
           " (accepted)\n";
  return "  freshness: the newest save of this run the record has seen\n";
}

void FreshnessRecord::record(const std::string& run_id, long step, const std::string& manifest_sha256) {
  const FileLock lock(path_);  // saves from several jobs under one key file: one at a time
  Runs runs;
  if (exists()) runs = parse_record(tee::read_sealed_file(path_, key_), path_.string());
  const auto it = runs.find(run_id);
  if (it != runs.end() && it->second.step > step) {
    throw IntegrityError("rollback: saving step " + std::to_string(step) + " but the freshness record (" +
                         path_.string() + ") has seen step " + std::to_string(it->second.step) +
                         " of this run");
  }
  runs[run_id] = {step, manifest_sha256};
  tee::SealOptions opts;
  opts.metadata = "{\"kind\":\"freshness\"}";
  const std::vector<std::uint8_t> bytes = encode_record(runs);
  tee::write_sealed_file(path_, key_, bytes, opts);  // temp file + fsync + rename + directory fsync
}

}  // namespace tt
