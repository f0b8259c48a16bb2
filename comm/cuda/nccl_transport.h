// NcclTransport: the Transport interface over ncclSend / ncclRecv, moving DEVICE memory GPU to GPU, so the
// same ring (DeviceRingAllreduce) runs over NVLink/PCIe/IB without host copies.
//
// Why operations are issued lazily, in groups: NCCL serialises every operation of one communicator (on
// one GPU stream), and a lone ncclRecv blocks that stream until the peer's matching ncclSend runs. If
// each isend/irecv were issued at once, a ring where every rank posts "receive from prev" before
// "send to next" would deadlock: each rank's stream waits in its receive while the send it waits for is
// queued behind the peer's own receive. So isend/irecv only queue the operation; the first test()/wait()
// on any request of this transport issues everything queued so far as ONE NCCL group
// (ncclGroupStart/End, which progresses all its sends and receives concurrently) and records one event
// after it. Callers must therefore post "the receives and sends of one step" and then wait, the same
// pattern on every rank — what DeviceRingAllreduce does (Note [Posting receives], comm/reduce_memory.h).
// (A memory without windowed receives, which posts a whole hop's receives before its first send and
// waits in between, is NOT deadlock-free over this transport.)
//
// Other differences from the Transport contract (comm/transport.h), all forced by NCCL:
// - Buffers are device pointers on the communicator's GPU.
// - NCCL has no tags: `tag` is recorded for error messages but not matched. Messages between a pair of
//   ranks are matched in the order they were posted (NCCL point-to-point operations between two ranks
//   are ordered), which keeps MPI's non-overtaking rule for one tag; do not interleave two collectives
//   with different tags on one NcclTransport.
// - NCCL needs the receive size to equal the send size exactly: a receive completes with its POSTED
//   size (a short message cannot be detected; a size mismatch is undefined in NCCL, typically a hang
//   that the wait timeout turns into a RunError). The ring always posts exact sizes.
// - A send to oneself and its receive must both be posted before either is waited on (NCCL requires
//   them in one group); they must have equal sizes. Violations are RunErrors, not hangs.
// - Operations cannot be cancelled: after a timeout, an error, or a request dropped while pending, the
//   communicator is marked failed (aborted on destruction) and this transport refuses further work.
//
// One thread at a time, like MpiTransport. The caller orders the work that writes a send buffer (or
// reads a received one) against this transport: the ring synchronises its own stream before posting a
// send and touches a received buffer only after wait() returned.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/cuda/nccl_comm.h"
#include "comm/transport.h"

namespace tt::comm::cuda {

class NcclTransport final : public Transport {
 public:
  // `comm` must outlive the transport and every request it returned. The wait timeout is the
  // communicator's.
  explicit NcclTransport(NcclComm& comm);
  ~NcclTransport() override;

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  std::string name() const override { return "nccl"; }
  Request isend(int peer, std::span<const std::byte> data, int tag) override;
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override;

  NcclComm& comm() { return comm_; }

  // Issues every queued operation as one NCCL group (a no-op when nothing is queued). Called by the
  // requests' poll(); public so a caller may push queued sends out without waiting on anything.
  void flush();

  struct PendingOp;  // one posted operation, shared by its request and the queue (defined in the .cpp)

 private:
  Request post(Op op, int peer, std::byte* ptr, std::size_t bytes, int tag);

  NcclComm& comm_;
  std::vector<std::shared_ptr<PendingOp>> queue_;  // posted since the last flush, in post order
};

}  // namespace tt::comm::cuda
