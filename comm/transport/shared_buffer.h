// SharedBuffer: host memory that the ranks on this host may map and read in place, and PeerView, such
// a buffer of a peer's mapped read-only here (Note [Shared buffers], comm/transport/shm_transport.h).
//
// A SharedBuffer is a memfd, sized and mapped once. A peer finds it through /proc/PID/fd/FD, which
// the kernel lets it open on the terms it lets it read our memory with process_vm_readv (the same user,
// ptrace's access check), and checks that it is a memfd and the one it was told about (its inode
// number): never another file the sender holds open.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tt::comm {

// Where buffers the ranks reduce live (--buffer, --grad-memory): in a SharedBuffer that host peers
// read and add from in place (Note [Shared buffers], comm/transport/shm_transport.h), or private memory.
enum class BufferMemory : std::uint8_t { Shared, Private };

class SharedBuffer {
 public:
  // At least `bytes` of zero-filled memory; nullopt (with `error` set) where the host refuses (no
  // memfd_create, no memory to reserve).
  static std::optional<SharedBuffer> create(std::size_t bytes, std::string& error);

  SharedBuffer(SharedBuffer&& other) noexcept;
  SharedBuffer& operator=(SharedBuffer&& other) noexcept;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer();

  std::byte* data() const { return base_; }
  std::size_t size() const { return bytes_; }
  int fd() const { return fd_; }
  std::uint64_t id() const { return id_; }  // the memfd's inode number: what a peer checks
  std::span<float> floats() const { return {reinterpret_cast<float*>(base_), bytes_ / sizeof(float)}; }

 private:
  SharedBuffer(std::byte* base, std::size_t bytes, int fd, std::uint64_t id)
      : base_(base), bytes_(bytes), fd_(fd), id_(id) {}
  void release() noexcept;
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  int fd_ = -1;
  std::uint64_t id_ = 0;
};

// A peer's SharedBuffer, mapped read-only into this process.
class PeerView {
 public:
  enum class Failure : std::uint8_t {
    Refused,   // the host does not let us open or map it: read the bytes another way
    Mismatch,  // the descriptor names another file, or a smaller one: not what a sender of ours said
  };
  // Maps `bytes` of the buffer that process `pid` holds as descriptor `fd` and that must have inode
  // `id`; nullopt with `failure` and `error` set when it cannot.
  static std::optional<PeerView> open(pid_t pid, int fd, std::uint64_t id, std::size_t bytes,
                                      Failure& failure, std::string& error);

  PeerView(PeerView&& other) noexcept;
  PeerView& operator=(PeerView&& other) noexcept;
  PeerView(const PeerView&) = delete;
  PeerView& operator=(const PeerView&) = delete;
  ~PeerView();

  const std::byte* data() const { return base_; }
  std::size_t size() const { return bytes_; }
  std::uint64_t id() const { return id_; }

 private:
  PeerView(const std::byte* base, std::size_t bytes, std::uint64_t id)
      : base_(base), bytes_(bytes), id_(id) {}
  const std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint64_t id_ = 0;
};

}  // namespace tt::comm
