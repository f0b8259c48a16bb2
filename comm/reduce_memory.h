// ReduceMemory: where the ring's buffers live — the one thing the host ring and the device ring differ in.
//
// The ring algorithm (comm/allreduce/ring_allreduce.h) is written once. What depends on the memory is asked
// of a ReduceMemory, in the way gloo separates algorithms from workspaces:
// - its persistent scratch (grown to the largest bucket seen, then reused),
// - how a received scatter-reduce segment is added in (a host loop, or a kernel on a stream),
// - when queued work must be finished (never on the host; a stream synchronisation on a GPU),
// - how receives are posted (a whole hop up front on the host; per window of segments where the
//   transport needs matching groups on both ends, as NCCL does).
// HostReduceMemory is below; DeviceReduceMemory is in comm/cuda/device_ring.h; EmulatedReduceMemory (an
// emulated GPU's adds as waits) is the emulated platform's (platform/emulated/emulated_reduce_memory.h).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "base/host_memory.h"
#include "comm/memory_space.h"
#include "comm/send_schedule.h"

namespace tt::comm {

// The ring's scratch for one call. reduce: (max_chunk,) floats that scatter-reduce receives land in;
// wire_out, wire_in: (max_segments * (segment_bytes + overhead),) bytes, empty for a pass-through channel.
struct ReduceScratch {
  float* reduce = nullptr;
  std::span<std::byte> wire_out;
  std::span<std::byte> wire_in;
};

class ReduceMemory {
 public:
  ReduceMemory() = default;
  virtual ~ReduceMemory() = default;
  ReduceMemory(const ReduceMemory&) = delete;
  ReduceMemory& operator=(const ReduceMemory&) = delete;

  virtual MemorySpace space() const = 0;
  // Grows the scratch to at least these sizes (contents need not survive) and returns it.
  virtual ReduceScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) = 0;
  virtual std::size_t scratch_bytes() const = 0;
  // dst[i] += src[i] for i in [0, n): one IEEE add per element, so host and device rings agree bit for
  // bit. May be queued; wait_queued() finishes it.
  virtual void add_into(float* dst, const float* src, std::size_t n) = 0;
  // Returns once every add queued so far, and whatever the caller queued before the call, is complete:
  // the ring calls it before its first send and after every hop, so no buffer is handed to a send or
  // a receive while a kernel still uses it.
  virtual void wait_queued() {}
  // When sends may go out (Note [Eager sends], send_schedule.h). Note [Posting receives]: Windowed:
  // post a hop's receives per window of segments, right before that window's sends, so every rank hands the
  // transport the same "receive window i, send window i" groups — NcclTransport issues each group as one NCCL
  // group, and a lone receive would block its GPU stream before the peer's send is issued (nccl_transport.h),
  // so this is what makes NCCL deadlock-free. Otherwise the whole hop's receives go out before its first
  // send, so a neighbour running ahead lands in posted buffers (no unexpected-message copies); MPI progresses
  // both either way. Relied on by HopRunner (hop_runner.cpp), the device ring (cuda/device_ring.h) and
  // NcclTransport. InOrder: add_into stands for device work that is modelled rather than done (an
  // emulated GPU's kernel: a wait), so each send must follow its adds. Default: host memory, Eager.
  virtual SendSchedule send_schedule() const { return SendSchedule::Eager; }
  // add_into is add_floats on host memory, done at once: then a transport that sums on receipt
  // (Transport::irecv_sum) may do the same adds for it. Not an emulated GPU's modelled adds.
  virtual bool adds_on_host() const { return false; }
};

// dst[i] += src[i] for i in [0, n): the host's one add loop (HostReduceMemory, ShmTransport's sums).
void add_floats(float* dst, const float* src, std::size_t n);

// Host memory: vectors, a vectorised loop, nothing queued.
class HostReduceMemory final : public ReduceMemory {
 public:
  MemorySpace space() const override { return MemorySpace::Host; }
  ReduceScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) override;
  std::size_t scratch_bytes() const override;
  void add_into(float* dst, const float* src, std::size_t n) override { add_floats(dst, src, n); }
  bool adds_on_host() const override { return true; }

 private:
  // Huge pages from 2 MiB up (Note [Huge pages for large host buffers], base/host_memory.h).
  HostVector<float> reduce_;
  HostVector<std::byte> wire_out_;
  HostVector<std::byte> wire_in_;
};

}  // namespace tt::comm
