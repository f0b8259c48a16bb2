#include "data/sealed_images.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "data/sealed_tokens.h"
#include "data/shard_files.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

// Reads the clear metadata (a JSON object, authenticated by the sealed-file header digest); a field
// that is missing or of the wrong type is an InputError naming the file, the field and the fix.
class MetaReader {
 public:
  MetaReader(const nlohmann::json& m, const fs::path& file) : m_(m), file_(file) {}
  [[noreturn]] void bad(const std::string& key, const std::string& want) const {
    throw InputError("sealed image set " + tee::quoted_path(file_) + ": metadata field \"" + key +
                     "\" is missing or not " + want + "; re-seal it with `teetrain seal-data --images ...`");
  }
  std::string str(const std::string& key) const {
    if (!m_.contains(key) || !m_[key].is_string()) bad(key, "a string");
    return m_[key].get<std::string>();
  }
  std::uint64_t count(const std::string& key, std::uint64_t max) const {
    if (!m_.contains(key) || !m_[key].is_number_unsigned() || m_[key].get<std::uint64_t>() > max)
      bad(key, "an integer in [0, " + std::to_string(max) + "]");
    return m_[key].get<std::uint64_t>();
  }
  // n floats; `positive`: each > 0 (a standard deviation divides).
  std::vector<float> floats(const std::string& key, std::size_t n, bool positive) const {
    if (!m_.contains(key) || !m_[key].is_array() || m_[key].size() != n)
      bad(key, std::to_string(n) + " numbers");
    std::vector<float> out;
    for (const auto& x : m_[key]) {
      // Within float range before the narrowing conversion, which is undefined beyond it.
      if (!x.is_number() || !(std::fabs(x.get<double>()) <= std::numeric_limits<float>::max()) ||
          (positive && !(x.get<float>() > 0.0f)))
        bad(key, std::to_string(n) + (positive ? " positive" : "") + " finite numbers");
      out.push_back(x.get<float>());
    }
    return out;
  }

 private:
  const nlohmann::json& m_;
  const fs::path& file_;
};

// The metadata of an image set (InputError if it is not JSON of kind image-set).
nlohmann::json parse_meta(const tee::SealedHeader& h, const fs::path& file) {
  nlohmann::json meta = parse_untrusted_json(h.metadata);
  if (!meta.is_object() || !meta.contains("kind") || meta["kind"] != kImageSetKind) {
    throw InputError(tee::quoted_path(file) + " is not a sealed image set (metadata " +
                     h.metadata.substr(0, 200) + "); seal images with `teetrain seal-data --images ...`");
  }
  return meta;
}

SealedImageInfo parse_info(const nlohmann::json& meta, const fs::path& file) {
  const MetaReader r{meta, file};
  SealedImageInfo i;
  i.file = file;
  i.split = r.str("split");
  i.source = r.str("source");
  i.images = r.count("images", UINT32_MAX);
  i.C = static_cast<int>(r.count("channels", 64));
  i.H = static_cast<int>(r.count("height", 4096));
  i.W = static_cast<int>(r.count("width", 4096));
  i.classes = static_cast<int>(r.count("classes", 256));
  if (i.C == 0 || i.H == 0 || i.W == 0 || i.classes == 0) r.bad("channels/height/width/classes", "positive");
  i.mean = r.floats("mean", static_cast<std::size_t>(i.C), false);
  i.std = r.floats("std", static_cast<std::size_t>(i.C), true);
  return i;
}

}  // namespace

ImageTransform SealedImageInfo::transform() const {
  ImageTransform t;
  t.mean = mean;
  t.std = std;
  return t;
}

std::string SealedImageInfo::describe() const {
  return source + " (sealed: " + std::to_string(images) + " images " + std::to_string(C) + "x" +
         std::to_string(H) + "x" + std::to_string(W) + ", " + std::to_string(classes) + " classes)";
}

// ---- sealing ----

fs::path sealed_images_path(const fs::path& out_dir, const std::string& name, const std::string& split) {
  return out_dir / (name + "_" + split + kSealedImagesSuffix);
}

namespace {

// Calls fn(records) on the records of `set` (label byte, then pixels), at most kBatch at a time, so
// memory stays bounded for any dataset size. Throws InputError on a label outside [0, classes).
template <typename Fn>
void for_each_record_batch(const ImageSet& set, Fn&& fn) {
  const std::size_t rec = image_record_bytes(set.C, set.H, set.W), pixels = rec - 1;
  constexpr std::size_t kBatch = 1024;
  std::vector<std::uint8_t> buf;  // (<= kBatch, rec) records
  for (std::size_t first = 0; first < set.size(); first += kBatch) {
    const std::size_t n = std::min(kBatch, set.size() - first);
    buf.resize(n * rec);
    for (std::size_t k = 0; k < n; ++k) {
      const int32_t y = set.labels[first + k];
      if (y < 0 || y >= set.classes) {
        throw InputError(set.source + ": label " + std::to_string(y) + " of image " +
                         std::to_string(first + k) + " is outside [0, " + std::to_string(set.classes) + ")");
      }
      buf[k * rec] = static_cast<std::uint8_t>(y);
      std::copy_n(set.pixels.begin() + static_cast<std::ptrdiff_t>((first + k) * pixels), pixels,
                  buf.begin() + static_cast<std::ptrdiff_t>(k * rec + 1));
    }
    fn(tee::ByteView(buf));
  }
}

// What seal_image_set refuses before writing anything.
void check_sealable(const ImageSet& set, const ImageTransform& norm, std::uint32_t chunk_size) {
  if (chunk_size == 0 || chunk_size > tee::kMaxSealChunkSize) {
    throw InputError("--chunk-kb: chunk size must be 1 byte .. 64 MiB (got " + std::to_string(chunk_size) +
                     ")");
  }
  if (set.size() == 0) throw InputError("image dataset " + set.source + " is empty; nothing to seal");
  if (set.size() > UINT32_MAX) throw InputError("image dataset " + set.source + " is too large to seal");
  const auto C = static_cast<std::size_t>(set.C);
  if (norm.mean.size() != C || norm.std.size() != C) {
    throw InputError("sealing " + set.source + " needs " + std::to_string(C) + " mean/std values");
  }
  if (set.classes < 1 || set.classes > 256) {
    throw InputError(set.source + ": " + std::to_string(set.classes) + " classes do not fit a 1-byte label");
  }
}

}  // namespace

RecordsDigest image_records_digest(const ImageSet& set) {
  RecordsDigest d;
  tee::Sha256 h;
  for_each_record_batch(set, [&](tee::ByteView records) {
    h.update(records);
    d.bytes += records.size();
  });
  d.sha256 = h.finish();
  return d;
}

SealedImageInfo seal_image_set(const ImageSet& set, const std::string& split, const ImageTransform& norm,
                               const DatasetBinding& binding, const fs::path& output,
                               const tee::DatasetKey& dataset_key, tee::Cipher cipher,
                               std::uint32_t chunk_size) {
  check_sealable(set, norm, chunk_size);
  if (binding.split != split)
    throw InputError("sealing " + set.source + ": binding of split " + binding.split);
  SealedImageInfo info;
  info.file = output;
  info.split = split;
  info.source = set.source;
  info.images = set.size();
  info.C = set.C;
  info.H = set.H;
  info.W = set.W;
  info.classes = set.classes;
  info.mean = norm.mean;
  info.std = norm.std;
  std::error_code ec;
  if (output.has_parent_path()) fs::create_directories(output.parent_path(), ec);
  if (ec)
    throw InputError("--out " + tee::quoted_path(output.parent_path()) + ": cannot create (" + ec.message() +
                     ")");

  tee::SealOptions opts;
  opts.cipher = cipher;
  opts.chunk_size = chunk_size;
  // ordered_json keeps the fields in this order (kind first), so the clear header reads naturally.
  nlohmann::ordered_json meta{{"kind", kImageSetKind},   {"split", split},       {"images", info.images},
                              {"channels", info.C},      {"height", info.H},     {"width", info.W},
                              {"classes", info.classes}, {"source", set.source}, {"mean", info.mean},
                              {"std", info.std}};
  binding.add_to(meta);
  opts.metadata = meta.dump();
  // The writer goes to a temporary file and renames on finish(): the output appears whole or not at all.
  tee::SealedFileWriter writer(output, dataset_key, opts);
  for_each_record_batch(set, [&](tee::ByteView records) { writer.write(records); });
  writer.finish();
  return info;
}

SealedImageDataset seal_image_dataset(const ImageSet& train, const ImageSet& test, const fs::path& out_dir,
                                      const std::string& name, const tee::DatasetKey& dataset_key,
                                      tee::Cipher cipher, std::uint32_t chunk_size) {
  // Both files record the training split's statistics: a run normalizes either split with them.
  const ImageTransform norm = ImageTransform::standard(train);
  check_sealable(train, norm, chunk_size);
  check_sealable(test, norm, chunk_size);
  // The manifest needs both record streams' digests before either file's metadata is written.
  DatasetManifest manifest(kImageSetKind, new_dataset_id());
  const RecordsDigest dtr = image_records_digest(train), dte = image_records_digest(test);
  manifest.add("train", dtr.bytes, dtr.sha256);
  manifest.add("test", dte.bytes, dte.sha256);
  SealedImageDataset out;
  out.binding = manifest.binding("train", 0);
  out.train = seal_image_set(train, "train", norm, out.binding, sealed_images_path(out_dir, name, "train"),
                             dataset_key, cipher, chunk_size);
  out.test = seal_image_set(test, "test", norm, manifest.binding("test", 0),
                            sealed_images_path(out_dir, name, "test"), dataset_key, cipher, chunk_size);
  return out;
}

// ---- finding ----

std::optional<fs::path> find_sealed_images(const std::string& spec, const std::string& split) {
  const std::string sfx = kSealedImagesSuffix;
  std::error_code ec;
  fs::path p(spec);
  std::string name = p.filename().string();
  // A sealed file: its prefix names the set (x_train.images.sealed -> x), so either split can be found.
  if (name.size() > sfx.size() && name.ends_with(sfx) && is_data_file(p)) {
    const std::string stem = name.substr(0, name.size() - sfx.size());
    const std::size_t us = stem.rfind('_');
    if (us == std::string::npos) return std::nullopt;
    p = p.parent_path() / stem.substr(0, us);
    name = p.filename().string();
  } else if (fs::is_directory(p, ec)) {
    const auto files = match_in_dir(p, "*_" + split + sfx);
    if (files.size() > 1) {
      throw InputError("--data " + spec + " holds " + std::to_string(files.size()) + " sealed " + split +
                       " image sets; name one by its prefix (e.g. " +
                       tee::quoted_path(files[0].parent_path() / files[0].filename().string().substr(
                                                                     0, files[0].filename().string().size() -
                                                                            sfx.size() - split.size() - 1)) +
                       ")");
    }
    if (files.empty()) return std::nullopt;
    return files[0];
  }
  const fs::path f = p.parent_path() / (name + "_" + split + sfx);
  if (is_data_file(f) && is_sealed_file(f)) return f;
  return std::nullopt;
}

SealedImageInfo read_sealed_image_info(const fs::path& file) {
  std::error_code ec;
  if (!is_data_file(file)) {
    throw InputError("sealed image set " + tee::quoted_path(file) +
                     " not found; seal images with `teetrain seal-data --images ...`");
  }
  return parse_info(parse_meta(tee::read_sealed_header(file), file), file);
}

// ---- SealedImageSet ----

SealedImageSet::SealedImageSet(const fs::path& file, const std::string& split,
                               const tee::DatasetKey& dataset_key, Profiler* profiler)
    : reader_(std::make_unique<SealedBlobReader>(file, dataset_key, profiler)) {
  // Open chunk 0 first: that authenticates the clear header (its digest is in every chunk's
  // associated data), so an edited header is an IntegrityError and the metadata parsed next is genuine.
  // The length field is bound only by the last chunk: authenticate it before comparing sizes.
  reader_->authenticated_size();
  if (reader_->size() == 0)
    throw InputError("sealed image set " + tee::quoted_path(file) + " holds no images; re-seal it");
  std::uint8_t first = 0;
  reader_->read(0, tee::MutableByteView(&first, 1));
  const nlohmann::json meta = parse_meta(reader_->header(), file);
  info_ = parse_info(meta, file);
  binding_ = read_binding(meta, file);
  check_split_files({{file, binding_}}, split);  // of `split`, and its only file
  if (reader_->size() != info_.images * info_.record_bytes()) {
    throw InputError("sealed image set " + tee::quoted_path(file) + " holds " +
                     std::to_string(reader_->size()) + " bytes, not the " + std::to_string(info_.images) +
                     " records of " + std::to_string(info_.record_bytes()) +
                     " bytes its metadata promises; re-seal it");
  }
}

void SealedImageSet::read_record(std::uint64_t image, tee::MutableByteView out) {
  reader_->read(image * record_bytes(), out.first(record_bytes()));
}

std::string SealedImageSet::describe() const {
  return info_.describe();
}

// ---- SealedImageLoader ----

SealedImageLoader::SealedImageLoader(SealedImageSet& data, ImageTransform transform, uint64_t seed,
                                     bool shuffle, IngressOptions ingress, Profiler* profiler,
                                     std::unique_ptr<BounceBuffer> bounce_buffer)
    : data_(data),
      batcher_(data.info().file.string(), data.info().C, data.info().H, data.info().W, data.size(),
               std::move(transform), seed, shuffle),
      profiler_(profiler),
      throttle_(ingress.gbps) {
  if (ingress.mode == IngressMode::Bounce)
    bounce_.emplace(ingress.link_cipher, ingress.rank, profiler, std::move(bounce_buffer));
}

void SealedImageLoader::check_shape(int C, int H, int W, int classes) const {
  const SealedImageInfo& i = data_.info();
  check_image_shape(i.source + " (" + i.file.string() + ")", i.C, i.H, i.W, i.classes, C, H, W, classes);
}

void SealedImageLoader::fill(Batch& out, uint64_t first_sample, int count) {
  batcher_.prepare(out, count);
  ScopedPhase timer(profiler_, Phase::Ingress);
  const auto started = IngressThrottle::Clock::now();
  const std::size_t rec = data_.record_bytes();
  staging_.resize(static_cast<std::size_t>(count) * rec);  // (B, rec) records as stored

  // Gather: open the chunk(s) each image lies in (the "CPU" in bounce mode, the rank in direct mode).
  for (int b = 0; b < count; ++b) {
    const uint64_t idx = image_of(first_sample + static_cast<uint64_t>(b));
    data_.read_record(idx, tee::MutableByteView(staging_).subspan(static_cast<std::size_t>(b) * rec, rec));
  }
  if (bounce_) bounce_->transfer(staging_, first_sample, count);
  throttle_.pace(staging_.size(), started);

  const int classes = data_.info().classes;
  for (int b = 0; b < count; ++b) {
    const std::uint8_t* r = staging_.data() + static_cast<std::size_t>(b) * rec;
    if (r[0] >= classes) {  // authentic, so sealed that way: a bad sealer, not an adversary
      throw InputError("sealed image set " + tee::quoted_path(data_.info().file) + " holds label " +
                       std::to_string(r[0]) + " outside its " + std::to_string(classes) +
                       " classes; re-seal it");
    }
    batcher_.put(out, b, first_sample + static_cast<uint64_t>(b), r + 1, r[0]);
  }
}

}  // namespace tt
