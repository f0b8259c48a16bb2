#include "tee/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace tt::tee {
namespace fs = std::filesystem;

namespace {

struct TypeName {
  mode_t type;
  const char* text;
};
constexpr TypeName kTypeNames[] = {
    {S_IFREG, "a regular file"},     {S_IFDIR, "a directory"},    {S_IFIFO, "a FIFO (named pipe)"},
    {S_IFCHR, "a character device"}, {S_IFBLK, "a block device"}, {S_IFSOCK, "a socket"},
    {S_IFLNK, "a symbolic link"},
};

// Words for the errno of a failed open, as a user would fix it.
std::string open_error_text(int error) {
  switch (error) {
    case ENOENT:
      return "not found";
    case ENOTDIR:
      return "not found (a component of the path is not a directory)";
    case EACCES:
    case EPERM:
      return "permission denied";
    case ENAMETOOLONG:
      return "the path, or one of its names, is too long";
    case ELOOP:
      return "is a symbolic link (refused here), or its links loop";
    case ENXIO:
      return "is a socket or a device with nothing behind it, not a regular file";
    case EILSEQ:
      return "the path is not valid in this system's encoding";
    default:
      return std::string("cannot open (") + std::strerror(error) + ")";
  }
}

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 if there is none.
std::size_t utf8_sequence_length(const std::string& s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  if (len == 0 || i + len > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if ((at(k) & 0xC0) != 0x80) return 0;
  return len;
}

}  // namespace

std::string quoted_path(const fs::path& path, const std::string& what) {
  return (what.empty() ? "'" : what + " '") + printable_path(path) + "'";
}

std::string file_type_text(mode_t mode) {
  for (const TypeName& t : kTypeNames)
    if ((mode & S_IFMT) == t.type) return t.text;
  return "not a regular file";
}

std::string OpenAttempt::why() const {
  if (error != 0) return open_error_text(error);
  if (!S_ISREG(type)) return "is " + file_type_text(type) + ", not a regular file";
  return "ok";
}

OpenAttempt try_open_regular(const fs::path& path, FollowLinks follow) {
  OpenAttempt a;
  const int flags =
      O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow == FollowLinks::No ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) {
    a.error = errno;
    return a;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    a.error = errno;
    return a;
  }
  a.type = st.st_mode & S_IFMT;
  if (!S_ISREG(st.st_mode)) return a;  // closed here, before anything is read from it
  a.file.fd = std::move(fd);
  a.file.size = static_cast<std::uint64_t>(st.st_size);
  return a;
}

RegularFile open_regular_file(const fs::path& path, const std::string& what, FollowLinks follow) {
  OpenAttempt a = try_open_regular(path, follow);
  if (!a.ok()) throw InputError(quoted_path(path, what) + ": " + a.why());
  return std::move(a.file);
}

std::optional<std::uint64_t> first_hole(int fd, std::uint64_t size) {
  if (size == 0) return std::nullopt;
  // SEEK_HOLE moves the descriptor's offset: readers here use pread, which ignores it.
  const off_t hole = ::lseek(fd, 0, SEEK_HOLE);
  if (hole < 0 || static_cast<std::uint64_t>(hole) >= size) return std::nullopt;  // (EINVAL: cannot tell)
  return static_cast<std::uint64_t>(hole);
}

std::string output_path_problem(const fs::path& path, const std::string& what) {
  const std::string head = what + " " + printable_path(path) + ": cannot be written: ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return head + "is " + file_type_text(st.st_mode & S_IFMT) + ", not a regular file";
    return {};
  }
  if (errno != ENOENT) return head + open_error_text(errno);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return head + "its directory " + printable_path(dir) + " does not exist; create it first";
  return {};
}

UniqueFd open_output_file(const fs::path& path, const std::string& what, OutputMode mode) {
  const auto refuse = [&](const std::string& why) {
    return InputError(what + " " + printable_path(path) + ": cannot open for writing: " + why);
  };
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644));
  if (!fd) {
    // A FIFO without a reader refuses a non-blocking writer with ENXIO: name what the path is.
    struct stat st {};
    if (errno == ENXIO && ::stat(path.c_str(), &st) == 0)
      throw refuse("is " + file_type_text(st.st_mode & S_IFMT) + ", not a regular file");
    throw refuse(open_error_text(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw refuse(open_error_text(errno));
  if (!S_ISREG(st.st_mode))
    throw refuse("is " + file_type_text(st.st_mode & S_IFMT) + ", not a regular file");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  const bool ok =
      flags >= 0 &&
      ::fcntl(fd.get(), F_SETFL, (flags & ~O_NONBLOCK) | (mode == OutputMode::Append ? O_APPEND : 0)) == 0 &&
      (mode == OutputMode::Append || ::ftruncate(fd.get(), 0) == 0);
  if (!ok) throw refuse(open_error_text(errno));
  return fd;
}

void write_output(int fd, std::string_view text, const fs::path& path, const std::string& what) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw RunError(what + " " + printable_path(path) + ": write failed (" + std::strerror(errno) + ")");
    done += static_cast<std::size_t>(n);
  }
}

std::vector<std::uint8_t> read_regular_file(const fs::path& path, const std::string& what,
                                            std::uint64_t max_size) {
  const RegularFile f = open_regular_file(path, what);
  if (f.size > max_size) {
    throw InputError(quoted_path(path, what) + ": " + std::to_string(f.size) + " bytes, more than the " +
                     std::to_string(max_size) + " it may hold");
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(f.size));
  std::uint8_t extra = 0;
  const long long got = pread_full(f.fd.get(), out, 0);
  const long long more = got < 0 ? 0 : pread_full(f.fd.get(), MutableByteView(&extra, 1), f.size);
  if (got < 0 || more < 0)
    throw RunError(quoted_path(path, what) + ": read failed (" + std::strerror(errno) + ")");
  if (got != static_cast<long long>(f.size) || more != 0)
    throw InputError(quoted_path(path, what) + ": changed size while being read");
  return out;
}

std::string printable_path(const fs::path& path) {
  const std::string& s = path.native();
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence_length(s, i);
    if (len > 0) {
      out.append(s, i, len);
      i += len;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    const auto c = static_cast<unsigned char>(s[i++]);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

}  // namespace tt::tee
