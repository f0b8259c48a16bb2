// An owned POSIX file descriptor, closed on destruction, plus whole-buffer read/write helpers that
// retry short transfers and EINTR. Used by the sealed-file reader and writer (pread/pwrite give
// random access without a shared file position), and the one atomic whole-file writer of tee/ (keys,
// certificates, revocation lists).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::tee {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Gives up ownership (e.g. to zlib's gzdopen, which closes the descriptor itself).
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes and reports the result (close can report a deferred write error).
  bool close() noexcept {
    const int rc = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return rc == 0;
  }

 private:
  int fd_ = -1;
};

// Reads exactly out.size() bytes at `offset`; returns the bytes read (fewer only at end of file),
// or -1 on an I/O error (errno set).
inline long long pread_full(int fd, MutableByteView out, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<long long>(done);
}

// Writes all of `data` at `offset`; false on an I/O error (errno set).
inline bool pwrite_full(int fd, ByteView data, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Writes `data` to `path` with `mode` from the first byte (temporary file, fsync, rename): a key is
// never readable by others, not even for an instant, and a reader never sees half a file. Throws
// RunError("<what> '<path>': cannot write (<errno text>)").
inline void write_file_atomic(const std::filesystem::path& path, ByteView data, mode_t mode,
                              const std::string& what) {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  const bool ok = fd && pwrite_full(fd.get(), data, 0) && ::fsync(fd.get()) == 0 && fd.close() &&
                  ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw RunError(what + " '" + path.string() + "': cannot write (" + why + ")");
  }
}

}  // namespace tt::tee
