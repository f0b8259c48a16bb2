// The ring on GPU gradient buckets (`--device cuda` with `--tee off`, or `--tee fast` with device
// crypto): DeviceRingAllreduce from comm/cuda, so the buckets never leave the GPU for the reduction.
//
// - Messages move GPU to GPU over NCCL (ncclSend/ncclRecv) when every rank on this host has its own GPU,
//   and through pinned host bounce buffers over MPI (StagedTransport) when ranks share a GPU, which NCCL
//   refuses. --link-gbps throttles either.
// - TEE fast: every ring message is sealed and opened on the GPU (GpuSealingCodec) with the rank's
//   SealedChannel key streams, so the bytes on the wire are the ones the CPU channel would produce.
// - TEE cc never comes here: H100 CC's path is the host row of the gradient-path table, staged
//   (gradient_paths.cpp: StagedPath): copy out, seal on the CPU, host ring, copy back.
// Exists only in CUDA builds.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "comm/allreduce/ring_allreduce.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport/mpi_transport.h"
#include "comm/transport/throttled_transport.h"
#include "core/backend.h"
#include "core/profiler.h"
#include "engine/gradients/gradient_path.h"

namespace tt {

struct DeviceRingConfig {
  comm::RingOptions ring;
  comm::SealedChannel* sealed = nullptr;  // non-null: seal on the GPU with this channel's key streams
  std::optional<comm::LinkLimit> link;    // --link-gbps
  int ranks_on_host = 1;                  // NCCL needs one GPU per rank on this host
};

// The device ring as a gradient path: sum() waits for the backend's queued work (the bucket's
// gradients), then sums the bucket in place across ranks; describe() names the wire ("nccl" or
// "staged(mpi)") and the codec. `host` is the run's MPI transport (bootstrap for NCCL, or the wire of
// the staged transport); it must outlive the result. `segment`: the segments the ring cuts, as picked.
// Throws InputError when this build has no CUDA.
std::unique_ptr<GradientPath> make_device_ring_path(Backend& backend, comm::MpiTransport& host,
                                                    const DeviceRingConfig& config, SegmentPick segment,
                                                    Profiler& profiler);

}  // namespace tt
