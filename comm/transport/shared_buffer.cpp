#include "comm/transport/shared_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/host_memory.h"
#include "tee/unique_fd.h"

namespace tt::comm {

namespace {

std::size_t page_rounded(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return std::max(page, (bytes + page - 1) / page * page);
}

}  // namespace

std::optional<SharedBuffer> SharedBuffer::create(std::size_t bytes, std::string& error) {
  const std::size_t len = page_rounded(bytes);
  tee::UniqueFd f(::memfd_create("teetrain-shared", MFD_CLOEXEC));
  if (!f) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return std::nullopt;
  }
  // Reserve the pages now, so that running out of memory is an error here, not a SIGBUS on first touch.
  if (const int rc = ::posix_fallocate(f.get(), 0, static_cast<off_t>(len)); rc != 0) {
    error = "reserving " + std::to_string(len) + " bytes of shared memory: " + std::strerror(rc);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) {
    error = std::string("fstat of a memfd: ") + std::strerror(errno);
    return std::nullopt;
  }
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f.get(), 0);
  if (p == MAP_FAILED) {
    error = std::string("mmap of a memfd: ") + std::strerror(errno);
    return std::nullopt;
  }
  // Note [Huge pages for large host buffers] (base/host_memory.h): shared memory gets them where the
  // host's shmem_enabled is `advise` or more (Debian's default, `never`, refuses the advice at no
  // cost). Asked before the first touch, which then faults every page in.
  if (len >= kHugePageBytes) ::madvise(p, len, MADV_HUGEPAGE);
  std::memset(p, 0, len);
  return SharedBuffer(static_cast<std::byte*>(p), len, f.release(), static_cast<std::uint64_t>(st.st_ino));
}

SharedBuffer::SharedBuffer(SharedBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      id_(std::exchange(other.id_, 0)) {}

SharedBuffer& SharedBuffer::operator=(SharedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    fd_ = std::exchange(other.fd_, -1);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

SharedBuffer::~SharedBuffer() {
  release();
}

void SharedBuffer::release() noexcept {
  if (base_ != nullptr) ::munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

std::optional<PeerView> PeerView::open(pid_t pid, int fd, std::uint64_t id, std::size_t bytes,
                                       Failure& failure, std::string& error) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const tee::UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f) {
    failure = Failure::Refused;
    error = "opening " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) {
    failure = Failure::Refused;
    error = "fstat of " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  // Only a memfd (shared memory) answers F_GET_SEALS: a descriptor of any other file the sender holds
  // open (a dataset, a checkpoint) is refused even where its inode number matches.
  if (static_cast<std::uint64_t>(st.st_ino) != id || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<std::size_t>(st.st_size) < bytes || ::fcntl(f.get(), F_GET_SEALS) < 0) {
    failure = Failure::Mismatch;
    error = path + " is not the " + std::to_string(bytes) + "-byte buffer " + std::to_string(id) +
            " its sender named";
    return std::nullopt;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, f.get(), 0);
  if (p == MAP_FAILED) {
    failure = Failure::Refused;
    error = "mmap of " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return PeerView(static_cast<const std::byte*>(p), bytes, id);
}

PeerView::PeerView(PeerView&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      id_(std::exchange(other.id_, 0)) {}

PeerView& PeerView::operator=(PeerView&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(const_cast<std::byte*>(base_), bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

PeerView::~PeerView() {
  if (base_ != nullptr) ::munmap(const_cast<std::byte*>(base_), bytes_);
}

}  // namespace tt::comm
