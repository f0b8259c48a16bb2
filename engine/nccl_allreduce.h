// `--allreduce nccl`: NVIDIA's ncclAllReduce on the GPU gradient buckets, the vendor baseline our
// ring is compared with. Exists only in CUDA builds; one GPU per rank (NCCL refuses two ranks on one
// GPU, with an error naming the counts).
#pragma once
#include <mpi.h>

#include <chrono>
#include <memory>

#include "core/backend.h"
#include "engine/ddp_reducer.h"

namespace tt {

class NcclAllreduce {
 public:
  virtual ~NcclAllreduce() = default;
  // The reducer's all-reduce: waits for the backend's queued work (the bucket's gradients), then sums
  // the bucket in place across ranks with ncclAllReduce and waits for it.
  virtual AllreduceFn fn() = 0;
};

// Collective over `comm`. Throws InputError when this build has no CUDA, RunError when NCCL cannot start.
std::unique_ptr<NcclAllreduce> make_nccl_allreduce(Backend& backend, MPI_Comm comm,
                                                   std::chrono::milliseconds timeout);

}  // namespace tt
