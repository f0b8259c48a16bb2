#include "comm/cuda/nccl_comm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/transport/mpi_transport.h"

namespace tt::comm::cuda {

void check_nccl(ncclResult_t rc, const char* what, const char* file, int line) {
  if (rc == ncclSuccess) return;
  std::string msg = std::string(what) + " failed: " + ncclGetErrorString(rc);
  // The last error string carries NCCL's detail (e.g. "Duplicate GPU detected"); it may be empty.
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') msg += std::string(": ") + detail;
  throw RunError(msg + " (" + file + ":" + std::to_string(line) + ")");
}

int device_for_rank(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type (ranks of this node)");
  int local_rank = 0;
  const int rc = MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  check_mpi(rc, "MPI_Comm_rank (node communicator)");
  const int devices = device_count_or_zero();
  if (devices == 0) throw RunError("rank " + std::to_string(rank) + ": no CUDA device visible");
  return local_rank % devices;
}

namespace {

// How many distinct physical GPUs the ranks of `comm` use (UUIDs are unique across nodes and are the
// same whatever CUDA_VISIBLE_DEVICES renumbering each rank sees).
int distinct_gpus(MPI_Comm comm, int device, int size) {
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::array<char, sizeof prop.uuid.bytes> mine{};
  std::memcpy(mine.data(), prop.uuid.bytes, mine.size());
  std::vector<char> all(mine.size() * static_cast<std::size_t>(size));  // (size, 16) UUIDs
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                          static_cast<int>(mine.size()), MPI_BYTE, comm),
            "MPI_Allgather (GPU UUIDs)");
  std::set<std::string> uuids;
  for (int r = 0; r < size; ++r) {
    uuids.emplace(all.data() + static_cast<std::size_t>(r) * mine.size(), mine.size());
  }
  return static_cast<int>(uuids.size());
}

}  // namespace

NcclComm::NcclComm(MPI_Comm comm, int device, std::chrono::milliseconds timeout) : timeout_(timeout) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  device_ = device == kCurrentDevice ? current_device() : device;
  DeviceGuard guard(device_);

  // Checked before NCCL: its own duplicate-GPU error is terse, and every rank reaches this verdict from
  // the same gathered data, so all of them throw (none is left waiting in ncclCommInitRank).
  const int gpus = distinct_gpus(comm, device_, size_);
  if (gpus < size_) {
    throw RunError("rank " + std::to_string(rank_) + ": NCCL needs one GPU per rank; found " +
                   std::to_string(size_) + " ranks on " + std::to_string(gpus) +
                   " GPUs (use the staged transport to share a GPU between ranks)");
  }

  // Rank 0's status travels with the id, so a failed ncclGetUniqueId stops every rank, not only rank 0.
  struct Bootstrap {
    int status = 0;
    ncclUniqueId id{};
  } boot;
  if (rank_ == 0) boot.status = static_cast<int>(ncclGetUniqueId(&boot.id));
  check_mpi(MPI_Bcast(&boot, static_cast<int>(sizeof boot), MPI_BYTE, 0, comm), "MPI_Bcast (ncclUniqueId)");
  if (boot.status != static_cast<int>(ncclSuccess)) {
    throw RunError("rank " + std::to_string(rank_) + ": ncclGetUniqueId failed on rank 0: " +
                   ncclGetErrorString(static_cast<ncclResult_t>(boot.status)));
  }
  const ncclResult_t rc = ncclCommInitRank(&comm_, size_, boot.id, rank_);
  if (rc != ncclSuccess) {
    comm_ = nullptr;
    const std::string what = "ncclCommInitRank (rank " + std::to_string(rank_) + " of " +
                             std::to_string(size_) + ", device " + std::to_string(device_) + ")";
    check_nccl(rc, what.c_str(), __FILE__, __LINE__);
  }
  try {
    stream_.emplace();
  } catch (...) {
    (void)ncclCommDestroy(comm_);
    throw;
  }
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  try {
    DeviceGuard guard(device_);
    // A destroy after a failure would wait for the failed operation's peers: abort instead.
    if (failed_) {
      (void)ncclCommAbort(comm_);
    } else {
      (void)ncclCommDestroy(comm_);
    }
  } catch (...) {
    (void)ncclCommAbort(comm_);  // could not even select the device; release what we can
  }
}

void NcclComm::check_async(const std::string& what) {
  ncclResult_t async = ncclSuccess;
  TT_COMM_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async == ncclSuccess || async == ncclInProgress) return;
  failed_ = true;
  check_nccl(async, (what + " (asynchronous NCCL error on rank " + std::to_string(rank_) + ")").c_str(),
             __FILE__, __LINE__);
}

void NcclComm::wait_stream(const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto nap = std::chrono::microseconds(1);
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(stream_->get());
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) {
      failed_ = true;
      ::tt::cuda::check_cuda(rc, (what + " (NCCL stream)").c_str(), __FILE__, __LINE__);
    }
    check_async(what);
    const auto waited = Clock::now() - start;
    if (waited >= timeout_) {
      failed_ = true;
      throw RunError("rank " + std::to_string(rank_) + ": " + what + " did not finish within " +
                     std::to_string(static_cast<double>(timeout_.count()) / 1000.0) +
                     " s; a peer is dead, stuck or not answering");
    }
    // Yield while the operation is likely about to finish, then nap so a waiting rank does not steal
    // a core from its peers (several ranks may share a node's cores).
    if (waited < std::chrono::microseconds(200)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(100));
    }
  }
}

void NcclComm::require_healthy(const std::string& what) const {
  if (failed_) {
    throw RunError("rank " + std::to_string(rank_) + ": " + what +
                   ": the NCCL communicator failed earlier and cannot be used again");
  }
}

void NcclComm::allreduce_sum(float* device_data, std::size_t count) {
  require_healthy("nccl all-reduce");
  if (count == 0) return;
  if (device_data == nullptr) throw RunError("nccl all-reduce: null buffer");
  DeviceGuard guard(device_);
  TT_COMM_NCCL_CHECK(
      ncclAllReduce(device_data, device_data, count, ncclFloat, ncclSum, comm_, stream_->get()));
  wait_stream("ncclAllReduce of " + std::to_string(count) + " floats");
}

}  // namespace tt::comm::cuda
