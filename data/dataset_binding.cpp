#include "data/dataset_binding.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/error.h"
#include "base/hex.h"
#include "tee/bytes.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr const char* kReseal = "re-run `teetrain seal-data` to re-seal the dataset";

// Split names go into the manifest's space-separated lines, so they must not hold spaces or newlines.
bool is_split_name(const std::string& s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

// Reads the binding fields of (authenticated) metadata; every problem is an IntegrityError naming
// the file and the field, since a genuine seal-data run never writes them wrong.
class BindingReader {
 public:
  BindingReader(const nlohmann::json& m, const fs::path& file) : m_(m), file_(file) {}
  [[noreturn]] void bad(const std::string& key, const std::string& want) const {
    throw IntegrityError(tee::quoted_path(file_, "sealed file") + ": dataset binding field \"" + key +
                         "\" is missing or not " + want + "; " + kReseal);
  }
  std::string hex(const std::string& key, std::size_t n) const {
    if (!m_.contains(key) || !m_[key].is_string() || !is_hex(m_[key].get<std::string>(), n))
      bad(key, std::to_string(n) + " lowercase hex digits");
    return m_[key].get<std::string>();
  }
  std::string split(const std::string& key) const {
    if (!m_.contains(key) || !m_[key].is_string() || !is_split_name(m_[key].get<std::string>()))
      bad(key, "a split name ([a-z0-9]+)");
    return m_[key].get<std::string>();
  }
  std::uint64_t count(const nlohmann::json& v, const std::string& key, std::uint64_t lo) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > kMaxBoundShards)
      bad(key, "an integer in [" + std::to_string(lo) + ", " + std::to_string(kMaxBoundShards) + "]");
    return v.get<std::uint64_t>();
  }
  std::uint64_t count(const std::string& key, std::uint64_t lo) const {
    if (!m_.contains(key)) bad(key, "an integer");
    return count(m_[key], key, lo);
  }
  std::map<std::string, std::uint64_t> splits(const std::string& key) const {
    if (!m_.contains(key) || !m_[key].is_object() || m_[key].empty() || m_[key].size() > kMaxBoundShards)
      bad(key, "an object of split names to file counts");
    std::map<std::string, std::uint64_t> out;
    for (auto it = m_[key].begin(); it != m_[key].end(); ++it) {
      if (!is_split_name(it.key())) bad(key, "an object of split names ([a-z0-9]+) to file counts");
      out[it.key()] = count(it.value(), key, 1);
    }
    return out;
  }

 private:
  const nlohmann::json& m_;
  const fs::path& file_;
};

}  // namespace

// ---- DatasetBinding ----

std::string DatasetBinding::describe() const {
  return "dataset " + short_hex(dataset, 8) + ", " + split + " shard " + std::to_string(shard) + " of " +
         std::to_string(shards);
}

void DatasetBinding::add_to(nlohmann::ordered_json& meta) const {
  meta["dataset"] = dataset;
  meta["split"] = split;
  meta["shard"] = shard;
  meta["shards"] = shards;
  meta["splits"] = splits;
  meta["manifest"] = manifest;
}

std::string new_dataset_id() {
  return tee::to_hex(tee::random_array<16>());
}

// ---- DatasetManifest ----

DatasetManifest::DatasetManifest(std::string kind, std::string dataset_id)
    : kind_(std::move(kind)), id_(std::move(dataset_id)) {}

std::uint64_t DatasetManifest::add(const std::string& split, std::uint64_t bytes,
                                   const tee::Sha256Digest& sha256) {
  if (!is_split_name(split)) throw InputError("split name '" + split + "' is not [a-z0-9]+");
  const auto index = static_cast<std::uint64_t>(
      std::count_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.split == split; }));
  if (index >= kMaxBoundShards) throw InputError("more than 2^20 files in split " + split);
  entries_.push_back({split, index, bytes, sha256});
  return index;
}

std::string DatasetManifest::canonical() const {
  std::vector<Entry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.split, a.index) < std::tie(b.split, b.index);
  });
  std::map<std::string, std::uint64_t> counts;
  for (const Entry& e : sorted) ++counts[e.split];
  std::string text = "teetrain sealed-dataset manifest v1\nkind " + kind_ + "\ndataset " + id_ + "\n";
  for (const Entry& e : sorted) {
    text += "file " + e.split + " " + std::to_string(e.index) + " " + std::to_string(counts[e.split]) + " " +
            std::to_string(e.bytes) + " " + tee::to_hex(e.sha256) + "\n";
  }
  return text;
}

std::string DatasetManifest::digest_hex() const {
  return tee::to_hex(tee::sha256(canonical()));
}

DatasetBinding DatasetManifest::binding(const std::string& split, std::uint64_t index) const {
  DatasetBinding b;
  b.dataset = id_;
  b.split = split;
  b.shard = index;
  for (const Entry& e : entries_) ++b.splits[e.split];
  b.shards = b.splits[split];
  b.manifest = digest_hex();
  return b;
}

// ---- reading and checking ----

DatasetBinding read_binding(const nlohmann::json& meta, const fs::path& file) {
  if (!meta.is_object() || !meta.contains("dataset")) {
    throw IntegrityError(tee::quoted_path(file, "sealed file") +
                         " carries no dataset binding (dataset id, split, shard index and count; "
                         "sealed by an older teetrain?); " +
                         kReseal);
  }
  const BindingReader r{meta, file};
  DatasetBinding b;
  b.dataset = r.hex("dataset", 32);
  b.split = r.split("split");
  b.shards = r.count("shards", 1);
  b.shard = r.count("shard", 0);
  if (b.shard >= b.shards) r.bad("shard", "below \"shards\" (" + std::to_string(b.shards) + ")");
  b.splits = r.splits("splits");
  const auto own = b.splits.find(b.split);
  if (own == b.splits.end() || own->second != b.shards)
    r.bad("splits", "consistent with \"split\" and \"shards\"");
  b.manifest = r.hex("manifest", 64);
  return b;
}

std::vector<std::size_t> check_split_files(const std::vector<BoundFile>& files, const std::string& split) {
  if (files.empty()) throw InputError("no sealed " + split + " files given");
  for (const BoundFile& f : files) {
    if (f.binding.split != split) {
      throw IntegrityError(tee::quoted_path(f.file, "sealed file") + " holds the " + f.binding.split +
                           " split but is loaded as " + split + " (renamed?); refusing it");
    }
    check_same_dataset(files.front(), f);
  }
  const std::uint64_t n = files.front().binding.shards;
  std::vector<std::size_t> order(n, files.size());  // shard index -> position in `files`
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::uint64_t s = files[i].binding.shard;
    if (order[s] != files.size()) {
      throw IntegrityError(tee::quoted_path(files[i].file, "sealed file") + " is " + split + " shard " +
                           std::to_string(s) + " of " + std::to_string(n) + " again (a copy of '" +
                           files[order[s]].file.string() + "'); refusing the duplicate");
    }
    order[s] = i;
  }
  const auto missing = std::find(order.begin(), order.end(), files.size());
  if (missing != order.end()) {
    throw IntegrityError("sealed " + split + " split next to '" + files.front().file.string() + "': shard " +
                         std::to_string(missing - order.begin()) + " of " + std::to_string(n) + " (dataset " +
                         short_hex(files.front().binding.dataset, 8) + ") is missing (" +
                         std::to_string(files.size()) + " of its files found); restore it or " + kReseal);
  }
  return order;
}

void check_same_dataset(const BoundFile& a, const BoundFile& b) {
  const DatasetBinding& x = a.binding;
  const DatasetBinding& y = b.binding;
  if (x.dataset != y.dataset || x.manifest != y.manifest || x.splits != y.splits) {
    throw IntegrityError(tee::quoted_path(b.file, "sealed file") +
                         " belongs to another sealed dataset (dataset " + short_hex(y.dataset, 8) +
                         ", manifest " + short_hex(y.manifest, 8) + ") than '" + a.file.string() +
                         "' (dataset " + short_hex(x.dataset, 8) + ", manifest " + short_hex(x.manifest, 8) +
                         "); all files must come from one `teetrain seal-data` run");
  }
}

}  // namespace tt
