// NcclComm: an NCCL communicator bootstrapped through MPI, and the vendor all-reduce baseline
// (`--allreduce nccl`) our device ring is measured against.
//
// NCCL runs one rank per GPU: it refuses two ranks of one communicator on the same device ("Duplicate
// GPU"). The constructor checks that before calling NCCL (every rank learns every rank's device UUID),
// so the failure is one clear RunError thrown on every rank instead of an NCCL internal error or a hang.
// Several ranks sharing one GPU must use StagedTransport instead (comm/cuda/staged_transport.h).
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "comm/cuda/cuda_util.h"

namespace tt::comm::cuda {

// Throws RunError("<what> failed: <ncclGetErrorString>[: <ncclGetLastError>]") unless rc == ncclSuccess.
void check_nccl(ncclResult_t rc, const char* what, const char* file, int line);

}  // namespace tt::comm::cuda

#define TT_COMM_NCCL_CHECK(call) ::tt::comm::cuda::check_nccl((call), #call, __FILE__, __LINE__)

namespace tt::comm::cuda {

// The GPU a rank should use: (rank among the ranks of its node) modulo the visible GPU count. Collective
// over `comm` (MPI_Comm_split_type). Throws RunError when no GPU is visible.
int device_for_rank(MPI_Comm comm);

class NcclComm {
 public:
  static constexpr int kCurrentDevice = -1;
  static constexpr std::chrono::milliseconds kDefaultTimeout{30'000};

  // Collective over `comm` (every rank must call it): rank 0 draws the ncclUniqueId and broadcasts it
  // with MPI, then every rank joins with ncclCommInitRank on `device` (kCurrentDevice: the device
  // current on the calling thread, i.e. whatever the caller chose with cudaSetDevice, usually
  // device_for_rank()). Throws RunError, on every rank, when two ranks would share a GPU
  // ("NCCL needs one GPU per rank; found N ranks on M GPUs") or when NCCL fails to initialise.
  explicit NcclComm(MPI_Comm comm, int device = kCurrentDevice,
                    std::chrono::milliseconds timeout = kDefaultTimeout);
  // ncclCommDestroy; ncclCommAbort instead after a failed or timed-out operation (a destroy would wait
  // for peers that will never come).
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  ncclComm_t get() const { return comm_; }
  // NCCL's own stream (non-blocking). NcclTransport enqueues its sends and receives here.
  cudaStream_t stream() const { return stream_->get(); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // In-place sum over all ranks of device_data[0, count) (ncclAllReduce, ncclFloat, ncclSum) on this
  // comm's stream; returns once the result is in device_data. Work that produced device_data on other
  // streams must be finished (or ordered before this call) by the caller. Throws RunError on an NCCL
  // error or when the operation does not finish within timeout().
  void allreduce_sum(float* device_data, std::size_t count);

  // Blocks until everything enqueued on stream() has finished, polling NCCL's asynchronous error state
  // so a dead peer becomes a RunError after timeout() instead of a hang. `what` names the operation.
  void wait_stream(const std::string& what);
  // Throws RunError when NCCL reports an asynchronous error on this communicator (marks it failed).
  void check_async(const std::string& what);
  // After an error the communicator is unusable: later operations throw, the destructor aborts.
  bool failed() const { return failed_; }
  // Marks the communicator unusable (an operation was abandoned while NCCL may still run it).
  void mark_failed() { failed_ = true; }
  // Throws RunError naming this rank when failed().
  void require_healthy(const std::string& what) const;

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  std::chrono::milliseconds timeout_;
  bool failed_ = false;
  std::optional<Stream> stream_;  // created in the constructor body, once device_ is current
};

}  // namespace tt::comm::cuda
