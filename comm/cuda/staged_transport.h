// StagedTransport: moves DEVICE buffers over a HOST transport (MpiTransport, InProcTransport) by
// bouncing every message through pinned host memory.
//
//   isend: device --cudaMemcpyAsync D2H--> pinned staging --host isend--> peer
//   irecv: peer --host irecv--> pinned staging --(on completion) cudaMemcpyAsync H2D--> device
//
// This is the data path of H100 confidential computing (the GPU cannot DMA to the network or to
// another GPU outside the TEE, so everything crosses a host bounce buffer), and it lets several ranks
// share one GPU, which NCCL refuses — so the device ring is testable with P ranks on one GPU.
//
// Semantics are the wrapped transport's (tags, ordering, short receives complete with the bytes that
// arrived, long ones are errors), for device buffers on `device`. isend returns once the device bytes
// are in staging (the copy is synchronous), so the device buffer may be reused as soon as isend
// returns; a receive's device buffer is written during the poll that completes it.
//
// Staging buffers come from a pool owned by the transport: after warm-up (the largest message and the
// most messages in flight seen once) no message allocates. A buffer whose request is dropped while
// pending (an error unwinding) may still be read or written by the host transport, so it is never
// reused; it is freed with the transport.
//
// One thread at a time, like the wrapped transport.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/cuda/cuda_util.h"
#include "comm/transport.h"

namespace tt::comm::cuda {

// Reusable pinned buffers. acquire() hands out the smallest free buffer that fits (allocating a new
// one, rounded up to 4 KiB, only when none does); release() gives it back; retire() keeps it out of
// circulation for good.
class PinnedPool {
 public:
  struct Slot {
    PinnedBytes bytes;
    bool in_use = false;
    bool retired = false;
  };
  Slot& acquire(std::size_t bytes);
  static void release(Slot& s) { s.in_use = false; }
  static void retire(Slot& s) { s.retired = true; }

  std::size_t allocations() const { return allocations_; }  // cudaMallocHost calls so far
  std::size_t pinned_bytes() const;                         // total pinned memory held

 private:
  std::vector<std::unique_ptr<Slot>> slots_;  // unique_ptr: slots keep their address as the vector grows
  std::size_t allocations_ = 0;
};

class StagedTransport final : public Transport {
 public:
  // `host` must outlive this transport. `device`: the GPU whose memory is passed (default: current).
  // The wait timeout starts as the host transport's.
  explicit StagedTransport(Transport& host, int device = -1);
  ~StagedTransport() override = default;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string name() const override { return "staged(" + host_.name() + ")"; }
  Request isend(int peer, std::span<const std::byte> device_data, int tag) override;
  Request irecv(int peer, std::span<std::byte> device_buffer, int tag) override;

  Transport& host() { return host_; }
  int device() const { return device_; }
  const PinnedPool& pool() const { return pool_; }

 private:
  Transport& host_;
  int device_;
  PinnedPool pool_;
  std::unique_ptr<Stream> stream_;  // copies; created once the device is current
};

}  // namespace tt::comm::cuda
