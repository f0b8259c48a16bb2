// The one way teetrain opens a file a user (or whoever owns the disk) named: keys, trust roots,
// revocation lists, policies, evidence, checkpoint files and manifests, token shards, image files,
// safetensors, text corpora.
//
// Note [Opening a user's file]: a path we are given may name anything: a FIFO, whose open() blocks
// until some writer appears (forever, if none does); a character device such as /dev/zero or
// /dev/urandom, which never ends; a directory; a socket. So every read of a user-given path opens it
// with O_NONBLOCK | O_CLOEXEC (an open that would wait for a FIFO's writer returns at once; on a
// regular file O_NONBLOCK changes nothing), asks fstat() what the descriptor names, and refuses
// anything but a regular file with an InputError (exit 2) that names the path and what it is. The
// type is taken from the opened descriptor, not from a stat() of the path before it: a path swapped
// between the two cannot slip a FIFO past the check. Open failures (missing, permission denied, a
// path or name too long, not valid in this locale) become the same kind of one-line InputError, never
// a std::filesystem or iostream error.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/unique_fd.h"

namespace tt::tee {

// Whether the last component of the path may be a symbolic link (checkpoint files may not be).
enum class FollowLinks { Yes, No };

// An open regular file and its size when it was opened.
struct RegularFile {
  UniqueFd fd;
  std::uint64_t size = 0;
};

// The outcome of try_open_regular: a regular file, or why not.
struct OpenAttempt {
  RegularFile file;
  int error = 0;    // errno of a failed open(), 0 when open() succeeded
  mode_t type = 0;  // S_IFMT bits of what was opened (S_IFREG when `file` is usable)
  bool ok() const { return error == 0 && S_ISREG(type); }
  // What went wrong, in words, e.g. "not found" or "is a FIFO (named pipe), not a regular file".
  std::string why() const;
};

// Opens `path` read-only without blocking (Note [Opening a user's file]); never throws for what the
// path names: the caller decides which failure is whose (a listed checkpoint file that is missing is
// an integrity failure, a missing key file is bad input).
OpenAttempt try_open_regular(const std::filesystem::path& path, FollowLinks follow = FollowLinks::Yes);

// The same, throwing InputError("<what> '<path>': <why>") unless it is a regular file.
RegularFile open_regular_file(const std::filesystem::path& path, const std::string& what,
                              FollowLinks follow = FollowLinks::Yes);

// Output files a user names (--summary, --json, --metrics, --trace, --write-policy, --calibrate) are
// opened the same way (Note [Opening a user's file]): without blocking, and refused unless what the
// descriptor names is a regular file — a FIFO planted at the path would block a plain open() until a
// reader appears, and a device or directory is no place for a result.
enum class OutputMode { Truncate, Append };
// Opens `path` for writing (created if missing), truncated or positioned at its end. Throws
// InputError("<what> <path>: cannot open for writing: <why>") otherwise.
UniqueFd open_output_file(const std::filesystem::path& path, const std::string& what, OutputMode mode);
// Why `path` cannot take an output file written later (at a run's end), checked before the run so that
// a FIFO, a directory or a missing directory costs no training: "" when it may be written (missing,
// or a regular file, in an existing directory), else "<what> <path>: cannot be written: <why>". The
// open itself (open_output_file) checks again: the path can change in between.
std::string output_path_problem(const std::filesystem::path& path, const std::string& what);
// Writes all of `text` at the descriptor's position; RunError("<what> <path>: write failed (...)").
void write_output(int fd, std::string_view text, const std::filesystem::path& path, const std::string& what);

// Longest PEM file (certificate, key, revocation list) read: far above any genuine one.
inline constexpr std::uint64_t kMaxPemFileBytes = std::uint64_t{16} << 20;

// The whole of a regular file, read through one descriptor. A file over `max_size` bytes is refused
// (InputError) before anything is read; a read error is a RunError; a file that changes size while
// it is read is an InputError.
std::vector<std::uint8_t> read_regular_file(const std::filesystem::path& path, const std::string& what,
                                            std::uint64_t max_size);

// The offset of the first hole in the file's first `size` bytes (bytes it reads as zeros that the disk
// does not hold, as `truncate -s` leaves), or nullopt when it has none or the filesystem cannot tell.
// A file that is written whole (a sealed file: ciphertext never holds a block of zeros) with a hole
// claims a size it never held, a cheap way to make a forged header's lengths match the file's size.
std::optional<std::uint64_t> first_hole(int fd, std::uint64_t size);

// "a FIFO (named pipe)", "a directory", "a character device", ... for a stat mode's type bits.
std::string file_type_text(mode_t mode);

// `path` as it appears in a message: its bytes when they are valid UTF-8, else with each invalid
// byte written as \xHH, so a message (and any JSON it lands in) never carries invalid UTF-8.
std::string printable_path(const std::filesystem::path& path);
// How a message names a file: "'PATH'", or "WHAT 'PATH'" ("key file 'k.key'"), PATH printable.
std::string quoted_path(const std::filesystem::path& path, const std::string& what = "");

}  // namespace tt::tee
