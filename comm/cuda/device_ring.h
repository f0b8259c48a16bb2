// DeviceRingAllreduce: the ring all-reduce of comm/ring_allreduce.h on DEVICE float buffers.
//
// Same algorithm, same geometry, same message contexts as the CPU RingAllreduce (P chunks whose sizes
// differ by at most one, segments of segment_bytes, scatter-reduce then all-gather, per-hop or
// forward-wire sealing), so for equal inputs the result is bit-identical to the CPU ring's: every chunk
// is summed once, in ring order, one IEEE add per element (reduce_kernel.h), then copied around.
//
// Differences from the CPU ring:
// - Messages go through a DeviceCodec (device_codec.h) and a Transport that moves device memory
//   (NcclTransport, or StagedTransport over MPI for ranks sharing a GPU).
// - Within a hop, receives are posted per window of segments, right before that window's sends, and
//   then waited on (the CPU ring posts the whole hop's receives first). Every rank then hands its
//   transport the same "receive window i, send window i" groups, which NcclTransport needs to be
//   deadlock-free (see nccl_transport.h); over MPI it only costs a few unexpected-message copies.
// - Received scatter-reduce segments land in a device scratch and are added in by a kernel on
//   `stream`. The stream is synchronised at the start of the call and after every hop, so a buffer is
//   never handed to a send or a receive while a kernel still uses it.
//
// Persistent device scratch (grows to the largest bucket seen, then reused):
//   reduce_buf_ (max_chunk,) floats; wire_out_, wire_in_ (max_segments * (segment_bytes + overhead),)
//   bytes, only for a sealing codec.
//
// Error policy (docs/design.md §5): a message that does not arrive in time or arrives short is a RunError
// naming this rank and the full MessageContext (tee::IntegrityError for a short sealed message, as on
// the CPU); a failed open propagates the codec's exception. The buffer is then partly reduced and must
// not be used.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/channel.h"
#include "comm/cuda/cuda_util.h"
#include "comm/cuda/device_codec.h"
#include "comm/ring_allreduce.h"
#include "comm/ring_geometry.h"
#include "comm/transport.h"
#include "engine/core/profiler.h"

namespace tt::comm::cuda {

class DeviceRingAllreduce {
 public:
  // Plaintext ring (an internal PlainDeviceCodec). `transport` moves device memory of the device that is
  // current when the ring is constructed; `stream` (on that device) runs the add kernels. Both must
  // outlive the ring.
  DeviceRingAllreduce(Transport& transport, cudaStream_t stream, RingOptions options = {},
                      Profiler* profiler = nullptr);
  // Ring whose messages go through `codec` (which must outlive the ring).
  DeviceRingAllreduce(Transport& transport, DeviceCodec& codec, cudaStream_t stream, RingOptions options = {},
                      Profiler* profiler = nullptr);
  DeviceRingAllreduce(const DeviceRingAllreduce&) = delete;
  DeviceRingAllreduce& operator=(const DeviceRingAllreduce&) = delete;

  // In-place sum over all ranks of device_data[0, count) (device memory). Every rank must call it with
  // the same count and id; only id.step and id.bucket are read. Work producing device_data must be
  // complete, or ordered before `stream`; on return the result is complete in device memory.
  void allreduce_sum(float* device_data, std::size_t count, const MessageContext& id);

  const RingOptions& options() const { return opt_; }
  DeviceCodec& codec() { return *codec_; }
  std::size_t scratch_bytes() const { return reduce_buf_.size() + wire_out_.size() + wire_in_.size(); }

 private:
  void prepare(std::size_t count, const MessageContext& id);
  void run_hop(float* data, const RingHop& h);
  void post_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1);
  void send_segments(float* data, const RingHop& h, std::size_t k0, std::size_t k1);
  void finish_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1);
  std::size_t wait(Request& r, const MessageContext& ctx);
  void sync_stream(const char* what) const;

  Transport& t_;
  PlainDeviceCodec plain_;
  DeviceCodec* codec_;
  cudaStream_t stream_;
  int device_;
  RingOptions opt_;
  Profiler* prof_;

  // Geometry of the current call.
  int rank_ = 0;
  int size_ = 1;
  RingGeometry geo_;

  // Persistent device scratch and request lists (capacity kept between calls).
  DeviceBytes reduce_buf_;  // (max_chunk,) floats
  DeviceBytes wire_out_;    // (max_segments * (seg_elems * 4 + overhead),) bytes
  DeviceBytes wire_in_;
  std::vector<Request> sends_;
  std::vector<Request> recvs_;  // recvs_[k] is segment k of the current hop
  std::vector<DeviceCodec::Job> jobs_;
};

}  // namespace tt::comm::cuda
