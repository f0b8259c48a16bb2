#include "core/emulated/aliased_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"

namespace tt {

AliasedMemory::AliasedMemory(std::size_t block_bytes)
    : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
  block_ = std::max(page_, (block_bytes + page_ - 1) / page_ * page_);
  fd_ = ::memfd_create("teetrain-emulated-gpu", MFD_CLOEXEC);
  if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(block_)) != 0) {
    const int err = errno;
    if (fd_ >= 0) ::close(fd_);
    errno = err;
    fail("memfd", block_);
  }
}

AliasedMemory::~AliasedMemory() {
  for (const auto& [base, len] : ranges_) ::munmap(base, len);
  ::close(fd_);
}

void* AliasedMemory::allocate(std::size_t bytes) {
  const std::size_t total = std::max(page_, (bytes + page_ - 1) / page_ * page_);
  // Reserve the whole range first so the fixed mappings below cannot land on anything else.
  void* reserved = ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) fail("mmap reserve", bytes);
  auto* base = static_cast<std::byte*>(reserved);
  for (std::size_t off = 0; off < total; off += block_) {
    const std::size_t len = std::min(block_, total - off);
    if (::mmap(base + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED) {
      const int err = errno;
      ::munmap(base, total);
      errno = err;
      fail("mmap", bytes);
    }
  }
  std::lock_guard lock(mu_);
  ranges_[base] = total;
  return base;
}

void AliasedMemory::deallocate(void* p) noexcept {
  std::lock_guard lock(mu_);
  const auto it = ranges_.find(p);
  if (it == ranges_.end()) return;
  ::munmap(it->first, it->second);
  ranges_.erase(it);
}

void AliasedMemory::fail(const char* what, std::size_t bytes) const {
  throw RunError("emulated GPU memory (" + std::to_string(bytes) + " bytes): " + what + ": " +
                 std::strerror(errno) + " (check vm.max_map_count and ulimit -v)");
}

}  // namespace tt
