// A POSIX shared-memory segment mapped into this process: the memory ShmTransport's channels live in.
//
// One process creates a segment under a fresh name and its peers open it by that name; the creator
// removes the name (unlink) once every peer has mapped it, so a process that dies later leaves nothing
// in /dev/shm. The mapping itself lasts until the last process unmaps it.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace tt::comm {

class ShmSegment {
 public:
  // A new zero-filled segment of `bytes` under `name` ("/..."), its pages reserved up front
  // (posix_fallocate), so that a full /dev/shm is an error here rather than a SIGBUS on first touch.
  // nullopt (with `error` set) when it cannot be made.
  static std::optional<ShmSegment> create(const std::string& name, std::size_t bytes, std::string& error);
  // A segment a peer created; nullopt (with `error` set) when it cannot be opened or is too small.
  static std::optional<ShmSegment> open(const std::string& name, std::size_t bytes, std::string& error);
  // Removes a name (not the mapping); quiet if it is already gone.
  static void unlink(const std::string& name);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();  // munmap

  std::byte* data() const { return base_; }
  std::size_t size() const { return bytes_; }

 private:
  ShmSegment(std::byte* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
};

// A name no other segment on this host has: the process id and 64 random bits.
std::string fresh_shm_name(const char* prefix);

}  // namespace tt::comm
