#include "engine/checkpoint/checkpoint_manifest.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/hex.h"
#include "base/untrusted_json.h"
#include "tee/bytes.h"
#include "tee/errors.h"

namespace tt {
using Json = nlohmann::json;

namespace ckptjson {
namespace {

[[noreturn]] void malformed(const std::string& what, const std::string& why) {
  throw IntegrityError(what + ": " + why);
}

}  // namespace

// No exceptions from nlohmann: a parse failure becomes our IntegrityError naming the file.
Json parse_object(std::span<const std::uint8_t> bytes, const std::string& what) {
  Json j = parse_untrusted_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (j.is_discarded()) malformed(what, "not valid JSON (or nested deeper than 64 levels)");
  if (!j.is_object()) malformed(what, "not a JSON object");
  return j;
}

const Json& field(const Json& j, const char* key, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end()) malformed(what, std::string("field '") + key + "' is missing");
  return *it;
}

std::uint64_t get_u64(const Json& j, const char* key, const std::string& what) {
  const Json& v = field(j, key, what);
  // Integers only: a float (1e30, 0.5) or a number beyond 64 bits is not a count.
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  malformed(what, std::string("field '") + key + "' is not a non-negative integer");
}

long get_step(const Json& j, const char* key, const std::string& what) {
  const std::uint64_t v = get_u64(j, key, what);
  if (v > static_cast<std::uint64_t>(kMaxCheckpointStep))
    malformed(what, std::string("field '") + key + "' is out of range");
  return static_cast<long>(v);
}

std::string get_hex(const Json& j, const char* key, std::size_t len, const std::string& what) {
  const Json& v = field(j, key, what);
  if (!v.is_string() || !is_hex(v.get<std::string>(), len))
    malformed(what,
              std::string("field '") + key + "' is not " + std::to_string(len) + " lowercase hex digits");
  return v.get<std::string>();
}

}  // namespace ckptjson

using ckptjson::field;
using ckptjson::get_hex;
using ckptjson::get_step;
using ckptjson::get_u64;

namespace {

[[noreturn]] void malformed(const std::string& what, const std::string& why) {
  throw IntegrityError(what + ": " + why);
}

bool is_sealed_name(const std::string& n) {
  return n.size() > 7 && n.compare(n.size() - 7, 7, ".sealed") == 0;
}

// The only names a checkpoint's manifest may list: no paths, nothing of the attacker's choosing.
std::string base_name(const std::string& n) {
  return is_sealed_name(n) ? n.substr(0, n.size() - 7) : n;
}

void check_file_names(const std::vector<ManifestFile>& files, const std::string& what) {
  std::set<std::string> seen;
  for (const ManifestFile& f : files) {
    const std::string b = base_name(f.name);
    if (b != kModelFile && b != kOptimizerFile && b != kStateFile)
      malformed(what, "lists an unexpected file name '" + f.name + "'");
    if (!seen.insert(b).second) malformed(what, "lists " + b + " twice");
    if (is_sealed_name(f.name) != is_sealed_name(files.front().name))
      malformed(what, "mixes sealed and plain file names");
  }
  for (const char* required : {kModelFile, kStateFile})
    if (seen.count(required) == 0) malformed(what, std::string("does not list ") + required);
}

std::vector<ManifestFile> parse_files(const Json& j, const std::string& what) {
  const Json& arr = field(j, "files", what);
  if (!arr.is_array() || arr.empty() || arr.size() > 8) malformed(what, "field 'files' is not a short array");
  std::vector<ManifestFile> files;
  for (const Json& e : arr) {
    if (!e.is_object()) malformed(what, "an entry of 'files' is not an object");
    const Json& name = field(e, "name", what);
    if (!name.is_string()) malformed(what, "a file name is not a string");
    files.push_back({name.get<std::string>(), get_u64(e, "size", what), get_hex(e, "sha256", 64, what)});
  }
  check_file_names(files, what);
  return files;
}

}  // namespace

std::string step_dir_name(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08ld", step);
  return buf;
}

std::optional<long> parse_step_dir_name(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() < 13 || name.size() > 18) return std::nullopt;
  long v = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');  // at most 13 digits: no overflow
  }
  if (v > kMaxCheckpointStep || name != step_dir_name(v)) return std::nullopt;  // one spelling per step
  return v;
}

const ManifestFile* CheckpointManifest::find(const std::string& name) const {
  const auto it =
      std::find_if(files.begin(), files.end(), [&](const ManifestFile& f) { return f.name == name; });
  return it == files.end() ? nullptr : &*it;
}

std::string new_run_id() {
  return tee::to_hex(tee::random_array<16>());
}

std::string encode_manifest(const CheckpointManifest& m) {
  Json files = Json::array();
  for (const ManifestFile& f : m.files)
    files.push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  const Json j = {
      {"format", kManifestFormat},
      {"run_id", m.run_id},
      {"step", m.step},
      {"dir", m.dir},
      {"prev_step", m.prev_step ? Json(*m.prev_step) : Json(nullptr)},
      {"prev_manifest_sha256", m.prev_manifest_sha256 ? Json(*m.prev_manifest_sha256) : Json(nullptr)},
      {"files", files}};
  return j.dump(2) + "\n";
}

CheckpointManifest parse_manifest(std::span<const std::uint8_t> bytes, const std::string& what) {
  const Json j = ckptjson::parse_object(bytes, what);
  const Json& format = field(j, "format", what);
  if (!format.is_string() || format.get<std::string>() != kManifestFormat)
    malformed(what, std::string("not a checkpoint manifest (format is not ") + kManifestFormat + ")");
  CheckpointManifest m;
  m.run_id = get_hex(j, "run_id", 32, what);
  m.step = get_step(j, "step", what);
  const Json& dir = field(j, "dir", what);
  if (!dir.is_string() || parse_step_dir_name(dir.get<std::string>()) != m.step)
    malformed(what, "field 'dir' is not the directory name of step " + std::to_string(m.step));
  m.dir = dir.get<std::string>();
  if (!field(j, "prev_step", what).is_null()) m.prev_step = get_step(j, "prev_step", what);
  if (!field(j, "prev_manifest_sha256", what).is_null())
    m.prev_manifest_sha256 = get_hex(j, "prev_manifest_sha256", 64, what);
  if (m.prev_step.has_value() != m.prev_manifest_sha256.has_value() ||
      (m.prev_step && *m.prev_step >= m.step))
    malformed(what, "prev_step and prev_manifest_sha256 do not describe an earlier save");
  m.files = parse_files(j, what);
  return m;
}

std::string encode_checkpoint_state(const CheckpointMeta& m) {
  const Json j = {{"step", m.step},
                  {"samples_consumed", m.samples_consumed},
                  {"seed", m.seed},
                  {"params_sha256", m.params_sha256},
                  {"param_floats", m.param_floats},
                  {"config", m.config}};
  return j.dump(2);
}

CheckpointMeta parse_checkpoint_state(std::span<const std::uint8_t> bytes, const std::string& what) {
  const Json j = ckptjson::parse_object(bytes, what);
  CheckpointMeta m;
  m.step = get_step(j, "step", what);
  m.samples_consumed = get_u64(j, "samples_consumed", what);
  m.seed = get_u64(j, "seed", what);
  m.params_sha256 = get_hex(j, "params_sha256", 64, what);
  m.param_floats = get_u64(j, "param_floats", what);
  const Json& config = field(j, "config", what);
  if (!config.is_object()) malformed(what, "field 'config' is not an object");
  m.config = config;
  return m;
}

}  // namespace tt
