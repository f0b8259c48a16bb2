// The ring all-reduce on DEVICE float buffers: comm/allreduce/ring_allreduce.h's one ring with a
// DeviceReduceMemory.
//
// The algorithm, geometry, message contexts, sealing modes and error policy are the host ring's (the
// same code runs); for equal inputs the result is bit-identical to it. What the device memory changes:
// - The transport moves device memory (NcclTransport, or StagedTransport over MPI for ranks sharing a
//   GPU), and a sealing channel seals device memory (GpuSealingCodec).
// - Receives are posted per window of segments, right before that window's sends (Note [Posting
//   receives], reduce_memory.h): NcclTransport needs it to be deadlock-free; over MPI it only costs a few
//   unexpected-message copies.
// - Received scatter-reduce segments land in a device scratch and are added in by a kernel on `stream`
//   (reduce_kernel.h). The stream is synchronised at the start of the call and after every hop, so a
//   buffer is never handed to a send or a receive while a kernel still uses it.
//
// Persistent device scratch (grows to the largest bucket seen, then reused):
//   reduce (max_chunk,) floats; wire_out, wire_in (max_segments * (segment_bytes + overhead),) bytes,
//   only for a sealing channel.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "comm/allreduce/ring_allreduce.h"
#include "comm/channel.h"
#include "comm/cuda/cuda_util.h"
#include "comm/reduce_memory.h"
#include "comm/transport.h"
#include "core/profiler.h"

namespace tt::comm::cuda {

// Device memory of the current device at construction; adds run on `stream` (which must outlive it).
class DeviceReduceMemory final : public ReduceMemory {
 public:
  explicit DeviceReduceMemory(cudaStream_t stream) : stream_(stream) {}
  MemorySpace space() const override { return MemorySpace::Device; }
  ReduceScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) override;
  std::size_t scratch_bytes() const override { return reduce_.size() + wire_out_.size() + wire_in_.size(); }
  void add_into(float* dst, const float* src, std::size_t n) override;  // queued on the stream
  void wait_queued() override;
  SendSchedule send_schedule() const override { return SendSchedule::Windowed; }

 private:
  cudaStream_t stream_;
  DeviceBytes reduce_;  // (max_chunk,) floats
  DeviceBytes wire_out_;
  DeviceBytes wire_in_;
};

// The ring on device buffers of the device current at construction, whichever device is current when
// it is called.
class DeviceRingAllreduce {
 public:
  // Plaintext ring. `transport` moves device memory of the current device; `stream` (on that device)
  // runs the add kernels. Both must outlive the ring.
  DeviceRingAllreduce(Transport& transport, cudaStream_t stream, RingOptions options = {},
                      Profiler* profiler = nullptr);
  // Ring whose messages go through `channel`, a pass-through or device-memory channel (which must
  // outlive the ring).
  DeviceRingAllreduce(Transport& transport, Channel& channel, cudaStream_t stream, RingOptions options = {},
                      Profiler* profiler = nullptr);
  DeviceRingAllreduce(const DeviceRingAllreduce&) = delete;
  DeviceRingAllreduce& operator=(const DeviceRingAllreduce&) = delete;

  // In-place sum over all ranks of device_data[0, count) (device memory); see RingAllreduce. Work
  // producing device_data must be complete, or ordered before `stream`; on return the result is complete.
  void allreduce_sum(float* device_data, std::size_t count, const MessageContext& id);
  // Its two halves (sharded data parallelism: Note [Shard layout], engine/gradients/shard.h), the host
  // ring's own (RingAllreduce::reduce_scatter_sum, all_gather) in the ring's segments: the scatter-reduce
  // leaves this rank the finished sum of RingGeometry::owned() only; the all-gather sends that range to
  // every rank and fills in the others. Same preconditions and completion as allreduce_sum.
  void reduce_scatter_sum(float* device_data, std::size_t count, const MessageContext& id);
  void all_gather(float* device_data, std::size_t count, const MessageContext& id);

  const RingOptions& options() const { return ring_.options(); }
  Channel& channel() { return ring_.channel(); }
  std::size_t scratch_bytes() const { return ring_.scratch_bytes(); }

 private:
  int device_;
  PlainChannel plain_;
  DeviceReduceMemory memory_;
  RingAllreduce ring_;
};

}  // namespace tt::comm::cuda
