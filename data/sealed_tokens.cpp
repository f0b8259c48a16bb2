#include "data/sealed_tokens.h"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <system_error>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "core/rng.h"
#include "data/shard_files.h"
#include "data/token_shard.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> read_raw(const fs::path& p) {
  return tee::read_regular_file(p, "token shard", UINT64_MAX);
}

}  // namespace

// ---- sealing ----

std::vector<fs::path> list_token_shards(const std::string& spec) {
  const fs::path p(spec);
  std::error_code ec;
  std::vector<fs::path> files;
  if (auto direct = files_named_directly(p)) {
    files = std::move(*direct);
  } else if (fs::is_directory(p, ec)) {
    files = match_in_dir(p, "*.bin");
  } else {
    files = match_in_dir(p.parent_path(), p.filename().string() + "_*.bin");
  }
  if (files.empty()) {
    throw InputError("no token shards found at '" + spec +
                     "' (a .bin file, a directory, a glob or a prefix); run `teetrain prepare-text` first");
  }
  return files;
}

ShardName token_shard_name(const fs::path& file) {
  const std::string n = file.filename().string();
  std::vector<ShardName> hits;
  for (const std::string split : {"train", "val"}) {
    const std::string exact = "_" + split + ".bin";
    const std::size_t numbered = n.find("_" + split + "_");
    if (n.ends_with(exact)) {
      hits.push_back({n.substr(0, n.size() - exact.size()), split});
    } else if (numbered != std::string::npos && n.ends_with(".bin")) {
      hits.push_back({n.substr(0, numbered), split});
    }
  }
  if (hits.size() != 1) {
    throw InputError("token shard " + tee::quoted_path(file) +
                     ": cannot tell its split from its name; name shards " +
                     "<name>_train[_NNN].bin or <name>_val[_NNN].bin (as `teetrain prepare-text` does)");
  }
  return hits.front();
}

namespace {

// One input shard, validated and digested before anything is sealed (every file's metadata holds the
// digest of the whole dataset's manifest).
struct PlannedShard {
  fs::path input;
  ShardName name;
  std::uint64_t tokens = 0;
  int vocab = 0;
  tee::Sha256Digest sha256{};
  std::uint64_t index = 0;
};

std::vector<PlannedShard> plan_shards(const std::vector<fs::path>& inputs, DatasetManifest& manifest) {
  std::vector<PlannedShard> plan;
  for (const fs::path& in : inputs) {
    const TokenShard shard = read_token_shard(in);  // refuse to seal a malformed shard
    PlannedShard p{in, token_shard_name(in), shard.tokens.size(), shard.recorded_vocab, {}, 0};
    if (!plan.empty() && p.name.prefix != plan.front().name.prefix) {
      throw InputError("the shards to seal hold several datasets ('" + plan.front().name.prefix + "', '" +
                       p.name.prefix + "'); one seal-data run seals one dataset: give --data DIR/<name>");
    }
    const std::vector<std::uint8_t> bytes = read_raw(in);
    p.sha256 = tee::sha256(bytes);
    p.index = manifest.add(p.name.split, bytes.size(), p.sha256);
    plan.push_back(std::move(p));
  }
  return plan;
}

SealedShardInfo seal_planned(const PlannedShard& p, const DatasetManifest& manifest, const fs::path& out_dir,
                             const tee::DatasetKey& dataset_key, const tee::SealOptions& base) {
  const std::vector<std::uint8_t> bytes = read_raw(p.input);
  if (tee::sha256(bytes) != p.sha256) {  // the manifest would promise other bytes than the file holds
    throw InputError("token shard " + tee::quoted_path(p.input) +
                     " changed while it was being sealed; seal it again");
  }
  SealedShardInfo info;
  info.input = p.input;
  info.output = out_dir / (p.input.filename().string() + kSealedSuffix);
  info.tokens = p.tokens;
  info.vocab = p.vocab;
  info.binding = manifest.binding(p.name.split, p.index);
  nlohmann::ordered_json meta{{"kind", kTokenShardKind},
                              {"name", tee::printable_path(p.input.filename())},  // JSON: UTF-8 only
                              {"tokens", info.tokens},
                              {"vocab", info.vocab}};
  info.binding.add_to(meta);
  tee::SealOptions opts = base;
  opts.metadata = meta.dump();
  tee::SealedFileWriter writer(info.output, dataset_key, opts);
  writer.write(bytes);
  writer.finish();
  info.chunks = writer.header().chunk_count();
  return info;
}

}  // namespace

std::vector<SealedShardInfo> seal_token_shards(const std::vector<fs::path>& inputs, const fs::path& out_dir,
                                               const tee::DatasetKey& dataset_key, tee::Cipher cipher,
                                               std::uint32_t chunk_size) {
  if (chunk_size == 0 || chunk_size > tee::kMaxSealChunkSize) {
    throw InputError("--chunk-size must be 1 byte .. 64 MiB (got " + std::to_string(chunk_size) + ")");
  }
  DatasetManifest manifest(kTokenShardKind, new_dataset_id());
  const std::vector<PlannedShard> plan = plan_shards(inputs, manifest);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw InputError("--out " + tee::quoted_path(out_dir) + ": cannot create (" + ec.message() + ")");
  tee::SealOptions opts;
  opts.cipher = cipher;
  opts.chunk_size = chunk_size;
  std::vector<SealedShardInfo> out;
  for (const PlannedShard& p : plan) out.push_back(seal_planned(p, manifest, out_dir, dataset_key, opts));
  return out;
}

// ---- finding sealed data ----

bool is_sealed_file(const fs::path& path) {
  // A FIFO or device is not a sealed file, and asking must not block on it (tee/regular_file.h).
  const tee::OpenAttempt a = tee::try_open_regular(path);
  std::array<std::uint8_t, 8> magic{};
  if (!a.ok() || tee::pread_full(a.file.fd.get(), magic, 0) != 8) return false;
  return std::string_view(reinterpret_cast<const char*>(magic.data()), magic.size()) == "TTSEAL01";
}

std::vector<fs::path> find_sealed_shards(const std::string& spec, const std::string& split) {
  return find_split_files(spec, split, std::string(".bin") + kSealedSuffix, is_sealed_file);
}

void refuse_plain_shards(const std::string& spec) {
  throw InputError("--data '" + spec +
                   "': plain shards refused in TEE mode; seal them with `teetrain seal-data` " +
                   "or pass --allow-plain-data");
}

bool require_sealed_data(const std::string& spec, const std::string& split, bool allow_plain) {
  if (!find_sealed_shards(spec, split).empty()) return true;
  if (!allow_plain) refuse_plain_shards(spec);
  return false;
}

// ---- SealedTokenDataset ----

SealedTokenDataset::Shard SealedTokenDataset::open_shard(const fs::path& f,
                                                         const tee::DatasetKey& dataset_key,
                                                         Profiler* profiler) {
  Shard s{std::make_unique<SealedBlobReader>(f, dataset_key, profiler), 0, 0, {}};
  const std::string what = "sealed token shard " + tee::quoted_path(f);
  // The length field first: only the last chunk authenticates it, and every size check below (bad
  // input: "re-seal it") must compare authentic numbers. An edited length is an integrity failure.
  s.reader->authenticated_size();
  if (s.reader->size() < kShardHeaderBytes) {
    throw InputError(what + " holds " + std::to_string(s.reader->size()) +
                     " bytes, less than a shard header");
  }
  // Opening the header chunk also authenticates the clear header (its digest is in every chunk's
  // associated data), so the metadata parsed below is genuine.
  std::array<std::uint8_t, kShardHeaderBytes> h{};
  s.reader->read(0, h);
  const std::string& text = s.reader->header().metadata;
  const nlohmann::json meta = parse_untrusted_json(text);
  if (!meta.is_object() || !meta.contains("kind") || meta["kind"] != kTokenShardKind) {
    throw InputError(what + " is not a token shard (metadata " + text.substr(0, 200) + ")");
  }
  s.binding = read_binding(meta, f);
  const auto [magic, version, count, vocab] = read_shard_header(h);
  if (magic != kShardMagic || version != kShardVersion || count < 0 || vocab < 0 || vocab > 65536 ||
      s.reader->size() != kShardHeaderBytes + 2 * static_cast<uint64_t>(count)) {
    throw InputError(what + " holds a malformed token shard (magic " + std::to_string(magic) + ", version " +
                     std::to_string(version) + ", " + std::to_string(count) + " tokens); re-seal it");
  }
  // Authentic, so a mismatch is a bad sealer, not an adversary: the metadata must describe the shard.
  if (!meta.contains("name") || !meta["name"].is_string() || !meta.contains("tokens") ||
      !meta["tokens"].is_number_unsigned() ||
      meta["tokens"].get<std::uint64_t>() != static_cast<uint64_t>(count) || !meta.contains("vocab") ||
      !meta["vocab"].is_number_unsigned() ||
      meta["vocab"].get<std::uint64_t>() != static_cast<uint64_t>(vocab)) {
    throw InputError(what + ": its metadata (name, tokens, vocab) does not describe the shard it holds (" +
                     std::to_string(count) + " tokens, vocab " + std::to_string(vocab) + "); re-seal it");
  }
  s.tokens = static_cast<uint64_t>(count);
  s.vocab = vocab > 0 ? vocab : kGpt2Vocab;
  return s;
}

SealedTokenDataset::SealedTokenDataset(const std::vector<fs::path>& files, const std::string& split,
                                       const tee::DatasetKey& dataset_key, Profiler* profiler) {
  if (files.empty()) throw InputError("no sealed token shards given; run `teetrain seal-data` first");
  std::vector<Shard> opened;
  std::vector<BoundFile> bound;
  opened.reserve(files.size());
  for (const fs::path& f : files) {
    opened.push_back(open_shard(f, dataset_key, profiler));
    bound.push_back({f, opened.back().binding});
  }
  // Authenticated index order, not file-name order: renaming shards within a split changes nothing.
  for (const std::size_t i : check_split_files(bound, split)) shards_.push_back(std::move(opened[i]));
  vocab_ = shards_.front().vocab;
  for (const Shard& s : shards_) {
    if (s.vocab != vocab_) {
      throw InputError("sealed token shard " + tee::quoted_path(s.reader->path()) + " has vocabulary " +
                       std::to_string(s.vocab) + " but " + tee::quoted_path(shard_file(0)) + " has " +
                       std::to_string(vocab_) + "; shards of one dataset must share a vocabulary");
    }
  }
}

SealedTokenDataset SealedTokenDataset::open(const std::string& spec, const std::string& split,
                                            const tee::DatasetKey& dataset_key, Profiler* profiler) {
  auto files = find_sealed_shards(spec, split);
  if (files.empty()) {
    throw InputError(
        "no sealed " + split + " token shards found at '" + spec +
        "' (a .bin.sealed file, a directory, a glob or a prefix); run `teetrain seal-data` first");
  }
  return SealedTokenDataset(files, split, dataset_key, profiler);
}

std::unique_ptr<SealedTokenDataset> SealedTokenDataset::open_other_split(const std::string& spec,
                                                                         const std::string& split,
                                                                         const SealedTokenDataset& first,
                                                                         const tee::DatasetKey& dataset_key,
                                                                         Profiler* profiler) {
  std::vector<fs::path> files = find_sealed_shards(spec, split);
  std::vector<fs::path> mine;
  for (std::size_t i = 0; i < first.num_shards(); ++i) mine.push_back(first.shard_file(i));
  std::sort(files.begin(), files.end());
  std::sort(mine.begin(), mine.end());
  if (files == mine) return nullptr;  // a file or glob names the shards, not a split
  if (files.empty()) {
    const auto it = first.binding().splits.find(split);
    if (it == first.binding().splits.end()) return nullptr;
    throw IntegrityError("--data '" + spec + "': the sealed dataset " + first.binding().dataset + " has " +
                         std::to_string(it->second) + " " + split + " shard(s), but none was found next to " +
                         tee::quoted_path(first.shard_file(0)) +
                         "; restore them or re-run `teetrain seal-data`");
  }
  auto other = std::make_unique<SealedTokenDataset>(files, split, dataset_key, profiler);
  check_same_dataset({first.shard_file(0), first.binding()}, {other->shard_file(0), other->binding()});
  return other;
}

uint64_t SealedTokenDataset::num_tokens() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s.tokens;
  return n;
}

std::string SealedTokenDataset::describe() const {
  const std::string what =
      shards_.size() == 1 ? shards_[0].reader->path().string() : std::to_string(shards_.size()) + " shards";
  // The manifest digest identifies the sealed dataset (seal-data printed it for the data owner).
  return what + " (sealed, " + human_count(num_tokens()) + " tokens, vocab " + std::to_string(vocab_) +
         ", manifest " + binding().manifest + ")";
}

void SealedTokenDataset::read_token_bytes(std::size_t shard, std::uint64_t first, tee::MutableByteView out) {
  shards_.at(shard).reader->read(kShardHeaderBytes + 2 * first, out);
}

// ---- SealedTokenLoader ----

SealedTokenLoader::SealedTokenLoader(SealedTokenDataset& data, int T, uint64_t seed, bool shuffle,
                                     IngressOptions ingress, Profiler* profiler,
                                     std::unique_ptr<BounceBuffer> bounce_buffer)
    : data_(data), T_(T), profiler_(profiler), throttle_(ingress.gbps) {
  if (T < 1) throw InputError("--seq must be at least 1 (got " + std::to_string(T) + ")");
  // The window layout of TokenLoader: floor((n_i - 1) / T) windows of T+1 tokens with stride T.
  shard_first_window_.push_back(0);
  for (std::size_t i = 0; i < data.num_shards(); ++i) {
    const uint64_t n = data.shard_tokens(i);
    num_windows_ += n > 0 ? (n - 1) / static_cast<uint64_t>(T) : 0;
    shard_first_window_.push_back(num_windows_);
  }
  if (num_windows_ == 0) {
    throw InputError("data too small for --seq " + std::to_string(T) + ": " + data.describe() +
                     " has no shard with the " + std::to_string(T + 1) + " tokens one sample needs");
  }
  if (num_windows_ > std::numeric_limits<uint32_t>::max()) {
    throw InputError("data too large: " + std::to_string(num_windows_) +
                     " windows exceed 2^32; use a larger --seq");
  }
  order_ = WindowOrder(num_windows_, seed, shuffle);
  if (ingress.mode == IngressMode::Bounce)
    bounce_.emplace(ingress.link_cipher, ingress.rank, profiler, std::move(bounce_buffer));
}

// Must stay identical to TokenLoader::permutation (a test compares the two loaders batch by batch).

uint64_t SealedTokenLoader::window_of(uint64_t g) {
  return order_.window_of(g);
}

void SealedTokenLoader::fill(Batch& out, uint64_t first_sample, int count) {
  if (count < 0) throw InputError("batch size must be >= 0 (got " + std::to_string(count) + ")");
  ScopedPhase timer(profiler_, Phase::Ingress);
  const auto started = IngressThrottle::Clock::now();
  const auto T = static_cast<std::size_t>(T_);
  const std::size_t row = 2 * (T + 1);                     // bytes of one window
  staging_.resize(static_cast<std::size_t>(count) * row);  // (B, T+1) uint16 LE

  // Gather: open the chunks each window lies in (the "CPU" in bounce mode, the rank in direct mode).
  for (int b = 0; b < count; ++b) {
    const uint64_t w = window_of(first_sample + static_cast<uint64_t>(b));
    const auto it = std::upper_bound(shard_first_window_.begin(), shard_first_window_.end(), w);
    const auto shard = static_cast<std::size_t>(it - shard_first_window_.begin() - 1);
    const uint64_t local = w - shard_first_window_[shard];
    data_.read_token_bytes(shard, local * T,
                           tee::MutableByteView(staging_).subspan(static_cast<std::size_t>(b) * row, row));
  }
  if (bounce_) bounce_->transfer(staging_, first_sample, count);
  throttle_.pace(staging_.size(), started);

  out.B = count;
  out.T = T_;
  out.tokens.resize(static_cast<std::size_t>(count) * T);   // (B, T)
  out.targets.resize(static_cast<std::size_t>(count) * T);  // (B, T)
  const auto vocab = static_cast<uint32_t>(data_.vocab());
  for (int b = 0; b < count; ++b) {
    const std::uint8_t* w = staging_.data() + static_cast<std::size_t>(b) * row;
    int32_t* x = out.tokens.data() + static_cast<std::size_t>(b) * T;
    int32_t* y = out.targets.data() + static_cast<std::size_t>(b) * T;
    for (std::size_t t = 0; t <= T; ++t) {
      const uint32_t tok = static_cast<uint32_t>(w[2 * t]) | (static_cast<uint32_t>(w[2 * t + 1]) << 8);
      if (tok >= vocab) {
        throw InputError("sealed token data holds token " + std::to_string(tok) +
                         " outside its vocabulary of " + std::to_string(vocab) +
                         "; re-create and re-seal the shards");
      }
      if (t < T) x[t] = static_cast<int32_t>(tok);
      if (t > 0) y[t - 1] = static_cast<int32_t>(tok);
    }
  }
}

}  // namespace tt
