#include "engine/gradients/device_ring_path.h"

#include "base/error.h"
#ifdef TEETRAIN_HAVE_CUDA
#include "comm/cuda/device_ring.h"
#include "comm/cuda/gpu_sealing_codec.h"
#include "comm/cuda/nccl_comm.h"
#include "comm/cuda/nccl_transport.h"
#include "comm/cuda/staged_transport.h"
#include "core/backend_factory.h"
#endif

namespace tt {
namespace {
#ifdef TEETRAIN_HAVE_CUDA
namespace cu = comm::cuda;

// Segments per GPU seal/open launch: enough messages to fill the GPU's SMs with counter-mode tiles.
constexpr std::size_t kGpuCryptoBatch = 16;

class Impl final : public GradientPath {
 public:
  Impl(Backend& backend, comm::MpiTransport& host, const DeviceRingConfig& c, SegmentPick segment,
       Profiler& profiler)
      : backend_(backend), segment_(std::move(segment)) {
    comm::Transport* wire = nullptr;
    if (c.ranks_on_host <= cuda_device_count()) {
      nccl_.emplace(host.comm(), cu::NcclComm::kCurrentDevice, host.timeout());
      nccl_transport_.emplace(*nccl_);
      wire = &*nccl_transport_;
    } else {
      staged_.emplace(host);
      wire = &*staged_;
    }
    if (c.link) {
      link_.emplace(*wire, *c.link);
      wire = &*link_;
    }
    if (c.sealed != nullptr) {
      codec_.emplace(*c.sealed, stream_.get(), kGpuCryptoBatch, &profiler);
      ring_.emplace(*wire, *codec_, stream_.get(), c.ring, &profiler);
    } else {
      ring_.emplace(*wire, stream_.get(), c.ring, &profiler);
    }
    describe_ = "device ring over " + wire->name() + (codec_ ? ", " + codec_->name() : ", plaintext");
  }
  void sum(float* g, std::size_t n, long step, int bucket) override {
    backend_.synchronize();  // the bucket's gradients are produced on the backend's stream
    ring_->allreduce_sum(g, n, bucket_message_id(step, bucket));
  }
  // The ring's halves on device buffers (Note [Shard layout], shard.h). The ring synchronises only its
  // own stream, so each half first waits for the backend's: the bucket's gradients (reduce-scatter), or
  // the optimizer's update of this rank's shard (all-gather), are queued there. On return the ring's
  // writes are complete, so kernels the backend queues after it read them.
  bool shards() const override { return true; }
  void reduce_scatter(float* g, std::size_t n, long step, int bucket) override {
    backend_.synchronize();
    ring_->reduce_scatter_sum(g, n, bucket_message_id(step, bucket));
  }
  void all_gather(float* x, std::size_t n, long step, int bucket) override {
    backend_.synchronize();
    ring_->all_gather(x, n, bucket_message_id(step, bucket));
  }
  std::string describe() const override { return describe_; }
  std::optional<SegmentPick> segment() const override { return segment_; }

 private:
  Backend& backend_;
  SegmentPick segment_;
  // Declaration order is destruction order reversed: the ring goes before its codec and transports.
  std::optional<cu::NcclComm> nccl_;
  std::optional<cu::NcclTransport> nccl_transport_;
  std::optional<cu::StagedTransport> staged_;
  std::optional<comm::ThrottledTransport> link_;
  cu::Stream stream_;
  std::optional<cu::GpuSealingCodec> codec_;
  std::optional<cu::DeviceRingAllreduce> ring_;
  std::string describe_;
};
#endif
}  // namespace

std::unique_ptr<GradientPath> make_device_ring_path(Backend& backend, comm::MpiTransport& host,
                                                    const DeviceRingConfig& config, SegmentPick segment,
                                                    Profiler& profiler) {
#ifdef TEETRAIN_HAVE_CUDA
  if (backend.kind() != DeviceKind::Cuda) throw InputError("the device ring needs --device cuda");
  return std::make_unique<Impl>(backend, host, config, std::move(segment), profiler);
#else
  (void)backend;
  (void)host;
  (void)config;
  (void)segment;
  (void)profiler;
  throw InputError("the device ring needs a teetrain built with CUDA");
#endif
}

}  // namespace tt
