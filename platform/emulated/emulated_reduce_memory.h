// EmulatedReduceMemory: the ring's memory on an emulated GPU (--compute emulate --link emulate, and every
// emulated ring in virtual time: Note [Modelled links need modelled compute],
// emulated_platform.cpp). The buffers are host memory (an EmulatedBackend's aliased zeros);
// each add of a received segment is the GPU's reduce kernel, a cost on the backend's communication
// stream (shared with the device AES-GCM), and is never done (the values are placeholders).
//
// The scratch is allocated but never cleared: an emulated ring reads only what it wrote (a sealed
// token, the carried bytes of a received one, or a whole message the host sealed in wall-clock time),
// and pages nobody touches cost no memory. A whole-model bucket of gpt2-xl is a 1.5 GB chunk per
// buffer at P = 4: zero-filled, three of them on each of four ranks would fill this machine's memory.
#pragma once
#include <memory>

#include "comm/reduce_memory.h"
#include "core/emulated/emulated_backend.h"

namespace tt::platform {

class EmulatedReduceMemory final : public comm::ReduceMemory {
 public:
  explicit EmulatedReduceMemory(EmulatedBackend& gpu) : gpu_(gpu) {}
  comm::MemorySpace space() const override { return comm::MemorySpace::Host; }
  comm::ReduceScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) override {
    reduce_.grow(reduce_floats);
    out_.grow(wire_bytes);
    in_.grow(wire_bytes);
    return {reduce_.data.get(), {out_.data.get(), out_.size}, {in_.data.get(), in_.size}};
  }
  std::size_t scratch_bytes() const override { return reduce_.size * sizeof(float) + out_.size + in_.size; }
  void add_into(float* /*dst*/, const float* /*src*/, std::size_t n) override {
    gpu_.comm_kernel(12.0 * static_cast<double>(n));  // dst and src read, dst written
  }
  comm::SendSchedule send_schedule() const override {
    return comm::SendSchedule::InOrder;
  }  // sends follow adds

 private:
  // Grow-only, uninitialised (std::make_unique_for_overwrite: no page is touched here).
  template <typename T>
  struct Uncleared {
    std::unique_ptr<T[]> data;
    std::size_t size = 0;
    void grow(std::size_t n) {
      if (n <= size) return;
      data = std::make_unique_for_overwrite<T[]>(n);
      size = n;
    }
  };

  EmulatedBackend& gpu_;
  Uncleared<float> reduce_;
  Uncleared<std::byte> out_;
  Uncleared<std::byte> in_;
};

}  // namespace tt::platform
