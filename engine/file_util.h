// Small file helpers with clear errors and crash-safe writes.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace tt {

// Reads a whole regular file (tee/regular_file.h: never blocks on a FIFO); throws InputError naming
// the path if it is missing, unreadable or not a regular file.
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);
// Writes via a temporary file in the same directory, fsync, then rename: readers see either the
// old file or the complete new one, never a torn write.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
// fsync a directory so a rename inside it is durable.
void sync_directory(const std::filesystem::path& dir);

// An exclusive advisory lock on "<path>.lock" (created if missing), held while the object lives: a
// read-modify-write of a small state file shared by several processes (the freshness record, the CRL
// state) must not lose another's update. Throws RunError naming the lock file when it cannot be taken.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;  // the lock goes with the descriptor
};

}  // namespace tt
