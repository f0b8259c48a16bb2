#include "engine/file_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

std::vector<std::byte> read_file_bytes(const fs::path& path) {
  const std::vector<std::uint8_t> b = tee::read_regular_file(path, "file", UINT64_MAX);
  const auto* p = reinterpret_cast<const std::byte*>(b.data());
  return {p, p + b.size()};
}

namespace {
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

void write_file_atomic(const fs::path& path, std::span<const std::byte> bytes) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) throw RunError(tmp.string() + ": cannot create (" + std::strerror(errno) + ")");
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw RunError(tmp.string() + ": write failed (" + std::strerror(errno) + ")");
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(f.fd) != 0) throw RunError(tmp.string() + ": fsync failed (" + std::strerror(errno) + ")");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw RunError(path.string() + ": rename failed (" + ec.message() + ")");
  sync_directory(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

void write_text_atomic(const fs::path& path, const std::string& text) {
  write_file_atomic(path, std::as_bytes(std::span(text.data(), text.size())));
}

void sync_directory(const fs::path& dir) {
  Fd f{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (f.fd >= 0) ::fsync(f.fd);
}

FileLock::FileLock(const fs::path& path) {
  const fs::path lock = path.string() + ".lock";
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw RunError(lock.string() + ": cannot open (" + std::strerror(errno) + ")");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw RunError(lock.string() + ": cannot lock (" + why + ")");
  }
}

FileLock::~FileLock() {
  ::close(fd_);
}

}  // namespace tt
