#include "comm/transport/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "tee/unique_fd.h"

namespace tt::comm {

namespace {

std::byte* map_shared(int fd, std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

std::string failed(const std::string& name, const std::string& what, int err) {
  return "shared memory segment " + name + ": " + what + ": " + std::strerror(err);
}

}  // namespace

std::optional<ShmSegment> ShmSegment::create(const std::string& name, std::size_t bytes, std::string& error) {
  // The descriptor closes once the mapping is made (the mapping outlives it) or set-up fails.
  const tee::UniqueFd f(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (!f) {
    error = failed(name, "shm_open", errno);
    return std::nullopt;
  }
  const auto len = static_cast<off_t>(bytes);
  // posix_fallocate returns the error instead of setting errno.
  if (const int rc = ::ftruncate(f.get(), len) != 0 ? errno : ::posix_fallocate(f.get(), 0, len); rc != 0) {
    error = failed(name, "reserving " + std::to_string(bytes) + " bytes (is /dev/shm full?)", rc);
    ShmSegment::unlink(name);
    return std::nullopt;
  }
  std::byte* base = map_shared(f.get(), bytes);
  if (base == nullptr) {
    error = failed(name, "mmap", errno);
    ShmSegment::unlink(name);
    return std::nullopt;
  }
  return ShmSegment(base, bytes);
}

std::optional<ShmSegment> ShmSegment::open(const std::string& name, std::size_t bytes, std::string& error) {
  const tee::UniqueFd f(::shm_open(name.c_str(), O_RDWR, 0));
  if (!f) {
    error = failed(name, "shm_open", errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes) {
    error = "shared memory segment " + name + ": smaller than " + std::to_string(bytes) + " bytes";
    return std::nullopt;
  }
  std::byte* base = map_shared(f.get(), bytes);
  if (base == nullptr) {
    error = failed(name, "mmap", errno);
    return std::nullopt;
  }
  return ShmSegment(base, bytes);
}

void ShmSegment::unlink(const std::string& name) {
  ::shm_unlink(name.c_str());
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

std::string fresh_shm_name(const char* prefix) {
  std::random_device rd;
  const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  char buf[96];
  std::snprintf(buf, sizeof buf, "/%s-%ld-%016llx", prefix, static_cast<long>(::getpid()),
                static_cast<unsigned long long>(r));
  return buf;
}

}  // namespace tt::comm
