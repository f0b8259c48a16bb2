#include "data/image_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <system_error>

#include "base/error.h"
#include "core/rng.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

// The most (decompressed) bytes one image file may hold: far above MNIST-style sets (Fashion-MNIST's
// training images are 47 MB) and CIFAR-10 batches (30 MB each), low enough that a gzip bomb or a
// header promising absurd sizes fails fast instead of exhausting memory.
constexpr uint64_t kMaxImageFileBytes = uint64_t{1} << 31;  // 2 GiB

uint32_t be32(const std::vector<uint8_t>& b, std::size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

// How many bytes an idx file may hold given its first bytes: its header's size plus what the header's
// dimensions describe (`item_dims` of them after the count, each `item` bytes a piece), or the absolute
// limit when the header is not one (the format check names the problem after reading).
uint64_t idx_size_limit(const std::vector<uint8_t>& head, std::size_t item_dims) {
  const std::size_t header = 8 + 4 * item_dims;
  if (head.size() < header) return kMaxImageFileBytes;
  uint64_t size = be32(head, 4);  // count: < 2^32, and each dimension below is <= 4096, so no overflow
  for (std::size_t d = 0; d < item_dims; ++d) {
    const uint32_t dim = be32(head, 8 + 4 * d);
    if (dim > 4096) return kMaxImageFileBytes;  // implausible: read_idx refuses it
    size *= dim;
  }
  return header + size;
}

// Reads a whole file, gunzipping it if it is gzip (gzread passes plain files through unchanged).
// Decompression stops one byte past `limit(first head_bytes bytes)` (at most kMaxImageFileBytes):
// a file holding more is refused with an InputError, so a small gzip file cannot expand without bound.
std::vector<uint8_t> read_maybe_gz(const fs::path& p, std::size_t head_bytes,
                                   const std::function<uint64_t(const std::vector<uint8_t>&)>& limit) {
  // Opened once, without blocking, and only if regular (tee/regular_file.h); zlib reads that descriptor.
  tee::RegularFile file = tee::open_regular_file(p, "image file");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzdopen(file.fd.get(), "rb"), gzclose);
  if (f == nullptr) throw InputError(p.string() + ": cannot open");
  file.fd.release();  // gzclose closes it now
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(1 << 16);
  uint64_t cap = kMaxImageFileBytes;
  bool capped = head_bytes == 0;
  for (;;) {
    if (!capped && out.size() >= head_bytes) {
      cap = limit(out);
      capped = true;
      if (cap > kMaxImageFileBytes) {
        throw InputError(p.string() + ": its header describes " + std::to_string(cap) +
                         " bytes, more than the 2 GiB an image file may hold");
      }
    }
    // Ask for the header's bytes alone first, so the cap applies before anything more is inflated.
    const uint64_t goal = capped ? cap + 1 : head_bytes;
    const auto want =
        static_cast<unsigned>(std::min<uint64_t>(buf.size(), goal - std::min(goal, out.size())));
    const int n = want == 0 ? 0 : gzread(f.get(), buf.data(), want);
    if (n < 0) {
      int err = 0;
      throw InputError(p.string() + ": corrupt or truncated gzip data (" + gzerror(f.get(), &err) +
                       "); re-download or re-install it");
    }
    if (n == 0 && (capped || want == 0)) break;
    if (n == 0) capped = true;  // shorter than a header: the format check reports it
    out.insert(out.end(), buf.begin(), buf.begin() + n);
  }
  if (out.size() > cap) {
    throw InputError(
        p.string() + ": holds more than the " + std::to_string(cap) +
        " bytes its header describes (trailing data, or a gzip stream that expands without bound)");
  }
  // A gzip stream cut short reads as a clean EOF in some zlib versions: gzclose reports it.
  if (gzclose(f.release()) != Z_OK) {
    throw InputError(p.string() + ": truncated gzip data; re-download or re-install it");
  }
  return out;
}

std::string hex(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

}  // namespace

std::string ImageSet::describe() const {
  return source + ": " + std::to_string(size()) + " images " + std::to_string(C) + "x" + std::to_string(H) +
         "x" + std::to_string(W) + ", " + std::to_string(classes) + " classes";
}

std::string ImageSet::sha256() const {
  const std::string shape = "teetrain image set " + std::to_string(C) + "x" + std::to_string(H) + "x" +
                            std::to_string(W) + ", " + std::to_string(classes) + " classes, " +
                            std::to_string(size()) + " images\n";
  std::vector<uint8_t> le(4 * labels.size());  // (N, 4): each label as a little-endian int32
  for (std::size_t i = 0; i < labels.size(); ++i)
    for (std::size_t b = 0; b < 4; ++b)
      le[4 * i + b] = static_cast<uint8_t>(static_cast<uint32_t>(labels[i]) >> (8 * b));
  tee::Sha256 h;
  h.update(shape).update(pixels).update(le);
  return tee::to_hex(h.finish());
}

ImageSet read_idx(const fs::path& images, const fs::path& labels) {
  const auto ib =
      read_maybe_gz(images, 16, [](const std::vector<uint8_t>& h) { return idx_size_limit(h, 2); });
  const auto lb =
      read_maybe_gz(labels, 8, [](const std::vector<uint8_t>& h) { return idx_size_limit(h, 0); });
  const std::string hint =
      "; expected an MNIST/Fashion-MNIST *-images-idx3-ubyte[.gz] / *-labels-idx1-ubyte[.gz] pair";
  if (ib.size() < 16 || be32(ib, 0) != 0x00000803u) {
    throw InputError(images.string() + ": not an idx image file (magic " +
                     (ib.size() >= 4 ? hex(be32(ib, 0)) : "missing") + ", want 0x00000803)" + hint);
  }
  if (lb.size() < 8 || be32(lb, 0) != 0x00000801u) {
    throw InputError(labels.string() + ": not an idx label file (magic " +
                     (lb.size() >= 4 ? hex(be32(lb, 0)) : "missing") + ", want 0x00000801)" + hint);
  }
  const uint64_t n = be32(ib, 4), rows = be32(ib, 8), cols = be32(ib, 12);
  const uint64_t nl = be32(lb, 4);
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    throw InputError(images.string() + ": implausible image size " + std::to_string(rows) + "x" +
                     std::to_string(cols));
  }
  if (ib.size() - 16 < n * rows * cols) {
    throw InputError(images.string() + ": truncated: header promises " + std::to_string(n) + " images of " +
                     std::to_string(rows) + "x" + std::to_string(cols) + " but the file holds " +
                     std::to_string(ib.size() - 16) + " pixel bytes; re-download or re-install it");
  }
  if (lb.size() - 8 < nl) {
    throw InputError(labels.string() + ": truncated: header promises " + std::to_string(nl) +
                     " labels but the file holds " + std::to_string(lb.size() - 8) +
                     "; re-download or re-install it");
  }
  if (n != nl) {
    throw InputError(images.string() + " has " + std::to_string(n) + " images but " + labels.string() +
                     " has " + std::to_string(nl) + " labels; use the matching pair");
  }
  ImageSet s;
  s.source = tee::printable_path(images);  // also lands in JSON (sealed metadata): UTF-8 only
  s.C = 1;
  s.H = static_cast<int>(rows);
  s.W = static_cast<int>(cols);
  s.pixels.assign(ib.begin() + 16, ib.begin() + 16 + static_cast<std::ptrdiff_t>(n * rows * cols));
  s.labels.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t y = lb[8 + i];
    if (y >= s.classes) {
      throw InputError(labels.string() + ": label " + std::to_string(y) + " of sample " + std::to_string(i) +
                       " is outside [0, 10); the file is corrupt or not MNIST-style");
    }
    s.labels[i] = y;
  }
  return s;
}

ImageSet read_cifar10(const std::vector<fs::path>& batches) {
  constexpr std::size_t kRecord = 1 + 3 * 32 * 32;
  if (batches.empty()) throw InputError("no CIFAR-10 batch files given");
  ImageSet s;
  s.source = tee::printable_path(batches.size() == 1 ? batches[0] : batches[0].parent_path());
  s.C = 3;
  s.H = 32;
  s.W = 32;
  for (const auto& p : batches) {
    const auto b = read_maybe_gz(p, 0, nullptr);  // no header: the absolute limit
    if (b.empty() || b.size() % kRecord != 0) {
      throw InputError(p.string() + ": " + std::to_string(b.size()) +
                       " bytes is not a whole number of CIFAR-10 records (" + std::to_string(kRecord) +
                       " bytes each): truncated or not a CIFAR-10 binary batch");
    }
    for (std::size_t r = 0; r < b.size() / kRecord; ++r) {
      const uint8_t y = b[r * kRecord];
      if (y >= s.classes) {
        throw InputError(p.string() + ": label " + std::to_string(y) + " of record " + std::to_string(r) +
                         " is outside [0, 10); not a CIFAR-10 (binary version) batch");
      }
      s.labels.push_back(y);
      s.pixels.insert(s.pixels.end(), b.begin() + static_cast<std::ptrdiff_t>(r * kRecord + 1),
                      b.begin() + static_cast<std::ptrdiff_t>((r + 1) * kRecord));
    }
  }
  return s;
}

ImageFiles find_image_files(const std::string& spec, const std::string& split) {
  if (split != "train" && split != "test")
    throw InputError("image split must be train or test, got '" + split + "'");
  fs::path dir = spec;
  const std::string name = tee::printable_path(spec) + " " + split;  // the source lands in JSON: UTF-8 only
  if (spec == "fashion-mnist") dir = "/usr/share/datasets/fashion-mnist";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError("image dataset '" + spec +
                     "' not found: give fashion-mnist (apt install dataset-fashion-mnist), " +
                     "or a directory of MNIST idx files or CIFAR-10 binary batches");
  }
  const std::string pre = split == "train" ? "train" : "t10k";
  for (const char* ext : {".gz", ""}) {
    const fs::path im = dir / (pre + "-images-idx3-ubyte" + ext);
    const fs::path lb = dir / (pre + "-labels-idx1-ubyte" + ext);
    if (fs::exists(im, ec) && fs::exists(lb, ec))
      return {.source = name, .format = ImageFormat::Idx, .files = {im, lb}};
  }
  for (const fs::path& d : {dir, dir / "cifar-10-batches-bin"}) {
    std::vector<fs::path> files;
    if (split == "train") {
      for (int i = 1; i <= 5; ++i) files.push_back(d / ("data_batch_" + std::to_string(i) + ".bin"));
    } else {
      files.push_back(d / "test_batch.bin");
    }
    if (std::all_of(files.begin(), files.end(), [&](const fs::path& f) { return fs::exists(f, ec); }))
      return {.source = name, .format = ImageFormat::Cifar10, .files = files};
  }
  throw InputError("no " + split + " images in '" + dir.string() + "': expected " + pre +
                   "-images-idx3-ubyte[.gz] + " + pre +
                   "-labels-idx1-ubyte[.gz] (MNIST layout) or CIFAR-10 " +
                   (split == "train" ? "data_batch_1..5.bin" : "test_batch.bin"));
}

ImageSet read_image_files(const ImageFiles& f) {
  ImageSet s = f.format == ImageFormat::Idx ? read_idx(f.files.at(0), f.files.at(1)) : read_cifar10(f.files);
  s.source = f.source;
  return s;
}

ImageSet open_image_dataset(const std::string& spec, const std::string& split) {
  return read_image_files(find_image_files(spec, split));
}

ImageTransform ImageTransform::standard(const ImageSet& train) {
  ImageTransform t;
  const std::size_t plane = static_cast<std::size_t>(train.H) * static_cast<std::size_t>(train.W);
  for (int c = 0; c < train.C; ++c) {
    double s = 0, ss = 0;
    for (std::size_t i = 0; i < train.size(); ++i) {
      const uint8_t* p =
          train.pixels.data() + (i * static_cast<std::size_t>(train.C) + static_cast<std::size_t>(c)) * plane;
      for (std::size_t k = 0; k < plane; ++k) {
        const double v = p[k] / 255.0;
        s += v;
        ss += v * v;
      }
    }
    const double n = static_cast<double>(train.size() * plane);
    const double m = n > 0 ? s / n : 0.0;
    const double var = n > 0 ? ss / n - m * m : 1.0;
    t.mean.push_back(static_cast<float>(m));
    t.std.push_back(static_cast<float>(std::sqrt(std::max(var, 1e-12))));
  }
  return t;
}

void check_image_shape(const std::string& source, int C, int H, int W, int classes, int model_C, int model_H,
                       int model_W, int model_classes) {
  if (model_C != C || model_H != H || model_W != W) {
    throw InputError(source + " has " + std::to_string(C) + "x" + std::to_string(H) + "x" +
                     std::to_string(W) + " images but the model expects " + std::to_string(model_C) + "x" +
                     std::to_string(model_H) + "x" + std::to_string(model_W) +
                     "; configure the model's channels/image size from the data");
  }
  if (model_classes < classes) {
    throw InputError(source + " has " + std::to_string(classes) + " classes but the model only " +
                     std::to_string(model_classes) + "; configure the model's class count from the data");
  }
}

// ---- ImageBatcher ----

ImageBatcher::ImageBatcher(const std::string& source, int C, int H, int W, uint64_t n,
                           ImageTransform transform, uint64_t seed, bool shuffle)
    : C_(C), H_(H), W_(W), n_(n), tf_(std::move(transform)), seed_(seed), shuffle_(shuffle) {
  if (n == 0) throw InputError("image dataset " + source + " is empty");
  if (n > UINT32_MAX) throw InputError("image dataset " + source + " is too large");
  const auto nc = static_cast<std::size_t>(C);
  if (!tf_.mean.empty() && (tf_.mean.size() != nc || tf_.std.size() != nc)) {
    throw InputError("image normalization needs " + std::to_string(C) + " mean/std values for " + source);
  }
  if (tf_.crop_pad < 0) throw InputError("crop padding must be >= 0");
  for (std::size_t c = 0; c < nc; ++c) {
    const float m = tf_.mean.empty() ? 0.0f : tf_.mean[c];
    const float s = tf_.std.empty() ? 1.0f : tf_.std[c];
    scale_.push_back(1.0f / (255.0f * s));
    shift_.push_back(-m / s);
  }
}

const std::vector<uint32_t>& ImageBatcher::permutation(uint64_t epoch) {
  if (!perm_.empty() && perm_epoch_ == epoch) return perm_;
  perm_.resize(n_);
  std::iota(perm_.begin(), perm_.end(), 0u);
  Rng rng(derive_seed(seed_, kDataStream, epoch));
  for (uint64_t i = n_ - 1; i > 0; --i) std::swap(perm_[i], perm_[rng.below(i + 1)]);
  perm_epoch_ = epoch;
  return perm_;
}

uint64_t ImageBatcher::image_of(uint64_t g) {
  return shuffle_ ? permutation(g / n_)[g % n_] : g % n_;
}

void ImageBatcher::prepare(Batch& out, int count) const {
  if (count < 0) throw InputError("batch size must be >= 0 (got " + std::to_string(count) + ")");
  const std::size_t per_image =
      static_cast<std::size_t>(C_) * static_cast<std::size_t>(H_) * static_cast<std::size_t>(W_);
  out.B = count;
  out.T = 0;
  out.tokens.clear();
  out.images.resize(static_cast<std::size_t>(count) * per_image);  // (B, C, H, W)
  out.targets.resize(static_cast<std::size_t>(count));             // (B)
}

void ImageBatcher::put(Batch& out, int b, uint64_t g, const uint8_t* pixels, int32_t label) const {
  const int C = C_, H = H_, W = W_;
  const std::size_t plane = static_cast<std::size_t>(H) * static_cast<std::size_t>(W);
  const std::size_t per_image = static_cast<std::size_t>(C) * plane;
  int dy = 0, dx = 0;
  bool flip = false;
  if (tf_.random_crop || tf_.hflip) {
    Rng rng(derive_seed(seed_, kAugStream, g));
    const auto span = static_cast<uint64_t>(2 * tf_.crop_pad + 1);
    if (tf_.random_crop) {
      dy = static_cast<int>(rng.below(span)) - tf_.crop_pad;
      dx = static_cast<int>(rng.below(span)) - tf_.crop_pad;
    }
    if (tf_.hflip) flip = (rng.next_u64() >> 63) != 0;
  }
  float* dst = out.images.data() + static_cast<std::size_t>(b) * per_image;  // (C, H, W)
  for (int c = 0; c < C; ++c) {
    const float sc = scale_[static_cast<std::size_t>(c)], sh = shift_[static_cast<std::size_t>(c)];
    const uint8_t* sp = pixels + static_cast<std::size_t>(c) * plane;
    float* dp = dst + static_cast<std::size_t>(c) * plane;
    for (int y = 0; y < H; ++y) {
      const int sy = y + dy;
      for (int x = 0; x < W; ++x) {
        const int xx = flip ? W - 1 - x : x;  // flip the cropped image
        const int sx = xx + dx;
        const uint8_t v = (sy >= 0 && sy < H && sx >= 0 && sx < W) ? sp[sy * W + sx] : 0;
        dp[y * W + x] = static_cast<float>(v) * sc + sh;
      }
    }
  }
  out.targets[static_cast<std::size_t>(b)] = label;
}

// ---- ImageLoader ----

ImageLoader::ImageLoader(const ImageSet& data, ImageTransform transform, uint64_t seed, bool shuffle)
    : data_(data),
      batcher_(data.source, data.C, data.H, data.W, data.size(), std::move(transform), seed, shuffle) {}

void ImageLoader::check_shape(int C, int H, int W, int classes) const {
  check_image_shape(data_.source, data_.C, data_.H, data_.W, data_.classes, C, H, W, classes);
}

void ImageLoader::fill(Batch& out, uint64_t first_sample, int count) {
  batcher_.prepare(out, count);
  const std::size_t per_image = static_cast<std::size_t>(data_.C) * static_cast<std::size_t>(data_.H) *
                                static_cast<std::size_t>(data_.W);
  for (int b = 0; b < count; ++b) {
    const uint64_t g = first_sample + static_cast<uint64_t>(b);
    const uint64_t idx = image_of(g);
    batcher_.put(out, b, g, data_.pixels.data() + idx * per_image, data_.labels[idx]);
  }
}

}  // namespace tt
