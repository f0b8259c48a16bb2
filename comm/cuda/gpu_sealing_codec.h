// GpuSealingCodec: TEE `fast` on a real GPU — ring messages sealed and opened where the gradients are,
// by the GPU AES-GCM (tee/cuda/gpu_aead.h), with the same key streams, nonces, associated data and wire
// format as the CPU SealedChannel (comm/secure/seal_streams.h). The codec draws its tickets from the rank's
// SealedChannel's key streams (Note [One counter per message, CPU or GPU]): a message sealed here is
// byte-identical to the one the CPU channel would have sealed in its place, and the host channel and
// this codec can take turns on one stream (the ring on the GPU, broadcasts and loss averages on the
// host).
//
//   wire = AES-GCM(key of the stream's epoch, the ticket's stream position, aad, plain) || tag (16)
//          || be32(epoch) || be64(counter)
//
// Per batch: one seal (or open) launch pair per key (a batch straddles a rekey at most once), one
// small-copies launch for the clear headers, and one synchronisation (the Channel batch contract is
// blocking: a batch's outputs are complete on return). An open verifies every message before returning and
// throws ChannelIntegrityError for the first failure in job order, with the same reasons as the CPU channel
// (tag mismatch, replayed or reordered, wrong epoch, clear header tampered); the failed message's plaintext
// output is zeroed.
//
// One thread at a time (the ring's). Device memory: the key tables of the streams in use and a
// descriptor scratch that grows to the largest batch.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/cuda/cuda_util.h"
#include "comm/cuda/small_copies.h"
#include "comm/secure/seal_streams.h"
#include "comm/secure/sealed_channel.h"
#include "core/profiler.h"
#include "tee/cuda/gpu_aead.h"

namespace tt::comm::cuda {

// A Channel over DEVICE memory (memory() == Device): every span it is handed holds device pointers.
class GpuSealingCodec final : public Channel {
 public:
  // `host` (the rank's one SealedChannel, whose key streams the codec shares) must outlive the codec.
  // Kernels run on `stream` of the device current at construction. `parallelism`: segments handed over per
  // batch (more segments per launch keep the GPU busy; fewer give finer overlap with the transport).
  GpuSealingCodec(SealedChannel& host, cudaStream_t stream, std::size_t parallelism = 16,
                  Profiler* profiler = nullptr);
  ~GpuSealingCodec() override;

  std::string name() const override;  // "gpu-sealed(aes-256-gcm)"
  std::size_t overhead() const override { return kSealOverhead; }
  bool pass_through() const override { return false; }
  MemorySpace memory() const override { return MemorySpace::Device; }
  std::size_t parallelism() const override { return parallelism_; }
  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override;
  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override;
  void seal_batch(std::span<const SealJob> jobs) override;
  void open_batch(std::span<const OpenJob> jobs) override;

 private:
  // One message of a batch, as the kernels see it (device pointers).
  struct Job {
    MessageContext ctx;
    const std::byte* in;  // plaintext (seal) or wire (open)
    std::byte* out;       // wire (seal) or plaintext (open)
    std::size_t plain_bytes;
  };
  static void check_sizes(const MessageContext& ctx, std::size_t plain, std::size_t wire);
  void seal_jobs(std::span<const Job> jobs);
  void open_jobs(std::span<const Job> jobs);
  struct KeySlot {
    std::size_t stream = 0;
    std::uint64_t epoch = 0;
    std::optional<tee::cuda::GpuAesGcm> aead;
  };
  // One batch's staging layout and totals (begin_batch draws the tickets into tickets_).
  struct Batch {
    std::size_t staging = 0;            // bytes of descriptors + headers
    SmallCopy* descs = nullptr;         // host_: (n,) descriptors
    std::byte* host_headers = nullptr;  // host_: (n, 12) header bytes
    std::byte* dev_headers = nullptr;   // dev_: their device mirror
    std::uint64_t bytes = 0;
    std::size_t ring = 0;
  };
  Batch begin_batch(std::span<const Job> jobs, bool sealing);
  tee::cuda::GpuAesGcm& aead_for(const SealTicket& t);
  // Fills messages_ from jobs and tickets_, then runs fn(aead, messages) once per run of equal keys.
  template <typename Fn>
  void for_each_key(std::span<const Job> jobs, Fn&& fn);

  SealStreams& streams_;
  cudaStream_t stream_;
  int device_;
  std::size_t parallelism_;
  Profiler* prof_;
  std::vector<KeySlot> keys_;
  std::vector<Job> jobs_;
  std::vector<SealTicket> tickets_;
  std::vector<tee::cuda::GpuMessage> messages_;
  std::vector<bool> ok_;
  // Pinned staging and its device mirror: (n,) SmallCopy descriptors, then (n, 12) header bytes.
  PinnedBytes host_;
  DeviceBytes dev_;
};

}  // namespace tt::comm::cuda
