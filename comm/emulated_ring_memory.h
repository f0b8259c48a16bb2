// EmulatedRingMemory: the ring's memory on an emulated GPU (--compute emulate --link emulate). The
// buffers are host memory (an EmulatedBackend's aliased zeros), so the ring's bytes are real; each add
// of a received segment is the GPU's reduce kernel, a wait on the backend's communication stream
// (shared with the device AES-GCM), and is never done (the values are placeholders).
#pragma once
#include "comm/ring_memory.h"
#include "engine/core/emulated/emulated_backend.h"

namespace tt::comm {

class EmulatedRingMemory final : public RingMemory {
 public:
  explicit EmulatedRingMemory(EmulatedBackend& gpu) : gpu_(gpu) {}
  MemorySpace space() const override { return MemorySpace::Host; }
  RingScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) override {
    return host_.scratch(reduce_floats, wire_bytes);
  }
  std::size_t scratch_bytes() const override { return host_.scratch_bytes(); }
  void add_into(float* /*dst*/, const float* /*src*/, std::size_t n) override {
    gpu_.comm_kernel(12.0 * static_cast<double>(n));  // dst and src read, dst written
  }
  bool modelled() const override { return true; }

 private:
  EmulatedBackend& gpu_;
  HostRingMemory host_;
};

}  // namespace tt::comm
