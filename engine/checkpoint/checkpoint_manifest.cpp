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

// No model gets near this (2^40 floats, 4 TiB): range arithmetic stays far from overflow.
constexpr std::uint64_t kMaxLayoutFloats = std::uint64_t{1} << 40;

bool is_sealed_name(const std::string& n) {
  return n.size() > 7 && n.compare(n.size() - 7, 7, ".sealed") == 0;
}

// The only names a checkpoint's manifest may list: no paths, nothing of the attacker's choosing.
std::string base_name(const std::string& n) {
  return is_sealed_name(n) ? n.substr(0, n.size() - 7) : n;
}

// A sharded checkpoint lists one optimizer shard per rank of its layout instead of the whole optimizer.
void check_file_names(const std::vector<ManifestFile>& files, const std::optional<ShardLayout>& layout,
                      const std::string& what) {
  std::set<std::string> seen;
  for (const ManifestFile& f : files) {
    const std::string b = base_name(f.name);
    const std::optional<int> shard = parse_optimizer_shard_file(b);
    const bool whole_file = b == kModelFile || b == kStateFile || (b == kOptimizerFile && !layout);
    if (!whole_file && !(shard && layout && *shard < layout->world))
      malformed(what, "lists an unexpected file name '" + f.name + "'");
    if (!seen.insert(b).second) malformed(what, "lists " + b + " twice");
    if (is_sealed_name(f.name) != is_sealed_name(files.front().name))
      malformed(what, "mixes sealed and plain file names");
  }
  for (const char* required : {kModelFile, kStateFile})
    if (seen.count(required) == 0) malformed(what, std::string("does not list ") + required);
  for (int r = 0; layout && r < layout->world; ++r)
    if (seen.count(optimizer_shard_file(r)) == 0) malformed(what, "does not list " + optimizer_shard_file(r));
}

std::vector<ParamRange> parse_ranges(const Json& arr, const std::string& what) {
  if (!arr.is_array()) malformed(what, "a shard of 'layout' is not an array of ranges");
  std::vector<ParamRange> out;
  for (const Json& r : arr) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_unsigned() || !r[1].is_number_unsigned())
      malformed(what, "a range of 'layout' is not [offset, count]");
    const auto offset = r[0].get<std::uint64_t>();
    const auto count = r[1].get<std::uint64_t>();
    if (count == 0 || offset > kMaxLayoutFloats || count > kMaxLayoutFloats - offset)
      malformed(what, "a range of 'layout' is empty or out of range");
    out.push_back(ParamRange{.offset = offset, .count = count});
  }
  return out;
}

// Every parameter float in exactly one rank's shard: sorted, the ranges must tile [0, params).
void check_tiling(const ShardLayout& l, const std::string& what) {
  std::vector<ParamRange> all;
  for (const auto& s : l.shards) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end(),
            [](const ParamRange& a, const ParamRange& b) { return a.offset < b.offset; });
  std::uint64_t at = 0;
  for (const ParamRange& r : all) {
    if (r.offset != at)
      malformed(what, "the shards of 'layout' overlap or leave a gap at float " + std::to_string(at));
    at += r.count;
  }
  if (at != l.params)
    malformed(what, "the shards of 'layout' do not cover its " + std::to_string(l.params) + " parameters");
}

std::optional<ShardLayout> parse_layout(const Json& j, const std::string& what) {
  const auto it = j.find("layout");
  if (it == j.end()) return std::nullopt;
  const Json& l = *it;
  if (!l.is_object()) malformed(what, "field 'layout' is not an object");
  ShardLayout out;
  const std::uint64_t world = get_u64(l, "world", what);
  if (world < 1 || world > static_cast<std::uint64_t>(kMaxCheckpointShards))
    malformed(what, "field 'world' is not between 1 and " + std::to_string(kMaxCheckpointShards));
  out.world = static_cast<int>(world);
  const Json& stage = field(l, "stage", what);
  const auto parsed = stage.is_string() ? parse_enum<ShardStage>(stage.get<std::string>()) : std::nullopt;
  if (!parsed || *parsed == ShardStage::None)
    malformed(what, "field 'stage' is not optimizer, gradients or params");
  out.stage = *parsed;
  out.params = get_u64(l, "params", what);
  if (out.params > kMaxLayoutFloats) malformed(what, "field 'params' is out of range");
  const Json& shards = field(l, "shards", what);
  if (!shards.is_array() || shards.size() != world)
    malformed(what, "field 'shards' does not hold one entry per rank");
  for (const Json& s : shards) out.shards.push_back(parse_ranges(s, what));
  check_tiling(out, what);
  return out;
}

ManifestFile parse_file_entry(const Json& e, const std::string& what) {
  if (!e.is_object()) malformed(what, "an entry of 'files' is not an object");
  const Json& name = field(e, "name", what);
  if (!name.is_string()) malformed(what, "a file name is not a string");
  return {name.get<std::string>(), get_u64(e, "size", what), get_hex(e, "sha256", 64, what)};
}

std::vector<ManifestFile> parse_files(const Json& j, const std::optional<ShardLayout>& layout,
                                      const std::string& what) {
  const Json& arr = field(j, "files", what);
  const std::size_t most = 8 + (layout ? static_cast<std::size_t>(layout->world) : 0);
  if (!arr.is_array() || arr.empty() || arr.size() > most)
    malformed(what, "field 'files' is not a short array");
  std::vector<ManifestFile> files;
  for (const Json& e : arr) files.push_back(parse_file_entry(e, what));
  check_file_names(files, layout, what);
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

std::uint64_t ShardLayout::floats(int rank) const {
  std::uint64_t n = 0;
  for (const ParamRange& r : shards.at(static_cast<std::size_t>(rank))) n += r.count;
  return n;
}

std::string optimizer_shard_file(int rank) {
  return "optimizer.rank" + std::to_string(rank) + ".safetensors";
}

std::optional<int> parse_optimizer_shard_file(const std::string& name) {
  const std::string n = base_name(name);
  constexpr std::string_view head = "optimizer.rank", tail = ".safetensors";
  if (n.size() <= head.size() + tail.size() || n.compare(0, head.size(), head) != 0 ||
      n.compare(n.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  const std::string digits = n.substr(head.size(), n.size() - head.size() - tail.size());
  if (digits.size() > 5 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;  // one spelling
  int r = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    r = r * 10 + (c - '0');
  }
  return r;
}

std::string new_run_id() {
  return tee::to_hex(tee::random_array<16>());
}

namespace {

Json encode_layout(const ShardLayout& l) {
  Json shards = Json::array();
  for (const auto& s : l.shards) {
    Json ranges = Json::array();
    for (const ParamRange& r : s) ranges.push_back({r.offset, r.count});
    shards.push_back(ranges);
  }
  return {{"world", l.world}, {"stage", enum_name(l.stage)}, {"params", l.params}, {"shards", shards}};
}

}  // namespace

std::string encode_manifest(const CheckpointManifest& m) {
  Json files = Json::array();
  for (const ManifestFile& f : m.files)
    files.push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  Json j = {{"format", kManifestFormat},
            {"run_id", m.run_id},
            {"step", m.step},
            {"dir", m.dir},
            {"prev_step", m.prev_step ? Json(*m.prev_step) : Json(nullptr)},
            {"prev_manifest_sha256", m.prev_manifest_sha256 ? Json(*m.prev_manifest_sha256) : Json(nullptr)},
            {"files", files}};
  if (m.layout) j["layout"] = encode_layout(*m.layout);
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
  m.layout = parse_layout(j, what);
  m.files = parse_files(j, m.layout, what);
  return m;
}

std::string encode_manifest_file(const ManifestFile& f) {
  return Json{{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}}.dump();
}

ManifestFile parse_manifest_file(std::span<const std::uint8_t> bytes, const std::string& what) {
  ManifestFile f = parse_file_entry(ckptjson::parse_object(bytes, what), what);
  if (!parse_optimizer_shard_file(f.name)) malformed(what, "names no optimizer shard");
  return f;
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
