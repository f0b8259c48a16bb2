// RAII ownership of one device allocation, and typed views into it.
#pragma once
#include <cstddef>
#include <span>
#include <stdexcept>
#include <utility>

#include "core/backend.h"

namespace tt {

// One contiguous device allocation. Arenas (parameters, gradients, optimizer state, activations)
// are each one DeviceBuffer, so a whole arena can be copied, reduced, hashed or sealed at once.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, std::size_t bytes)
      : backend_(&backend), ptr_(bytes ? backend.allocate(bytes) : nullptr), bytes_(bytes) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : backend_(o.backend_),
        ptr_(std::exchange(o.ptr_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)),
        owned_(std::exchange(o.owned_, true)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      owned_ = std::exchange(o.owned_, true);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset() noexcept {
    if (ptr_ != nullptr && owned_) backend_->deallocate(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    owned_ = true;
  }
  // Moves the contents into `memory` (at least bytes() of it, in the backend's address space: host
  // memory for a host backend) and keeps using it, without owning it: the caller keeps it alive for
  // as long as this buffer is used, and frees it. The backend's own allocation is freed here.
  void move_into(std::span<std::byte> memory) {
    if (memory.size() < bytes_) throw std::invalid_argument("DeviceBuffer::move_into: memory too small");
    if (bytes_ > 0) backend_->copy(memory.data(), ptr_, bytes_);
    if (ptr_ != nullptr && owned_) backend_->deallocate(ptr_);
    ptr_ = memory.data();
    owned_ = false;
  }
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  Backend* backend_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool owned_ = true;  // false after move_into: the memory is the caller's
};

}  // namespace tt
