// `--allreduce nccl`: NVIDIA's ncclAllReduce on the GPU gradient buckets, the vendor baseline our
// ring is compared with. Exists only in CUDA builds; one GPU per rank (NCCL refuses two ranks on one
// GPU, with an error naming the counts).
#pragma once
#include <mpi.h>

#include <chrono>
#include <memory>

#include "core/backend.h"
#include "engine/gradients/gradient_path.h"

namespace tt {

// ncclAllReduce as a gradient path: sum() waits for the backend's queued work (the bucket's
// gradients), then sums the bucket in place across ranks and waits for it. Collective over `comm`.
// Throws InputError when this build has no CUDA, RunError when NCCL cannot start.
std::unique_ptr<GradientPath> make_nccl_path(Backend& backend, MPI_Comm comm,
                                             std::chrono::milliseconds timeout);

}  // namespace tt
