#include "data/image_cache.h"

#include <sys/stat.h>

#include <cerrno>

#include "base/error.h"

namespace tt {
namespace {

// A file's identity as stat(2) gives it (Note [Shared decoded images]); a missing file has none, and
// reading it reports the problem.
std::string identity(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return p.string() + " (stat errno " + std::to_string(errno) + ")";
  const auto ns = [](const timespec& t) {
    return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec);
  };
  return p.string() + " " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_size) + " " + ns(st.st_mtim) + " " + ns(st.st_ctim);
}

}  // namespace

const std::string& DecodedImageSet::sha256() const {
  std::call_once(sha_once_, [this] { sha256_ = set_.sha256(); });
  return sha256_;
}

const ImageTransform& DecodedImageSet::standard() const {
  std::call_once(standard_once_, [this] { standard_ = ImageTransform::standard(set_); });
  return standard_;
}

std::shared_ptr<const DecodedImageSet> open_decoded_images(ImageSetCache* cache, const std::string& spec,
                                                           const std::string& split) {
  if (cache != nullptr) return cache->open(spec, split);
  return std::make_shared<const DecodedImageSet>(open_image_dataset(spec, split));
}

std::shared_ptr<const DecodedImageSet> ImageSetCache::open(const std::string& spec,
                                                           const std::string& split) {
  const ImageFiles files = find_image_files(spec, split);
  Key key{spec, split, {}};
  for (const auto& f : files.files) std::get<2>(key).push_back(identity(f));
  std::shared_ptr<Slot> slot;
  {
    const std::lock_guard lock(mu_);
    std::shared_ptr<Slot>& s = slots_[key];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  const std::lock_guard lock(slot->mu);  // the first caller decodes; the others wait for its result
  if (!slot->set) slot->set = std::make_shared<const DecodedImageSet>(read_image_files(files));
  return slot->set;
}

}  // namespace tt
