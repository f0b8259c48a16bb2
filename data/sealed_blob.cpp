#include "data/sealed_blob.h"

#include <algorithm>
#include <stdexcept>

#include "base/error.h"
#include "data/shard_files.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {
// Checked before SealedFileReader opens the file, so a typo is "bad input" (exit 2), not an I/O error.
const fs::path& existing(const fs::path& p) {
  if (!is_data_file(p)) {  // a FIFO or device is refused right here, with its kind named
    throw InputError("sealed file '" + tee::printable_path(p) +
                     "' not found; seal data with `teetrain seal-data`");
  }
  return p;
}
}  // namespace

SealedBlobReader::SealedBlobReader(const fs::path& path, tee::AtRestKey key, Profiler* profiler)
    : file_(existing(path), key), profiler_(profiler) {}

void SealedBlobReader::load_chunk(std::uint64_t index) {
  if (index == cached_chunk_) return;
  const auto plain = static_cast<std::size_t>(file_.header().chunk_plain_size(index));
  cache_.resize(std::max(cache_.size(), plain));
  cached_chunk_ = kNoChunk;  // a failed open must not leave a half-valid cache behind
  file_.read_chunk(index, tee::MutableByteView(cache_.data(), plain));
  cached_chunk_ = index;
  ++chunks_opened_;
  if (profiler_ != nullptr) {
    profiler_->add(Counter::MessagesOpened, 1);
    profiler_->add(Counter::BytesOpened, static_cast<int64_t>(plain));
  }
}

void SealedBlobReader::read(std::uint64_t offset, tee::MutableByteView out) {
  const std::uint64_t total = size();
  if (offset > total || out.size() > total - offset) {
    throw std::out_of_range("sealed file '" + path().string() + "': read of " + std::to_string(out.size()) +
                            " bytes at " + std::to_string(offset) + " is past the end (" +
                            std::to_string(total) + " bytes)");
  }
  const std::uint64_t c = file_.header().chunk_size;
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t pos = offset + done;
    const std::uint64_t index = pos / c;
    const auto within = static_cast<std::size_t>(pos - index * c);
    load_chunk(index);
    const auto plain = static_cast<std::size_t>(file_.header().chunk_plain_size(index));
    const std::size_t take = std::min(plain - within, out.size() - done);
    std::copy_n(cache_.begin() + static_cast<std::ptrdiff_t>(within), take,
                out.begin() + static_cast<std::ptrdiff_t>(done));
    done += take;
  }
}

}  // namespace tt
