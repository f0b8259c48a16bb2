#include "comm/cuda/staged_transport.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace tt::comm::cuda {

PinnedPool::Slot& PinnedPool::acquire(std::size_t bytes) {
  Slot* best = nullptr;
  for (auto& s : slots_) {
    if (s->in_use || s->retired || s->bytes.size() < bytes) continue;
    if (best == nullptr || s->bytes.size() < best->bytes.size()) best = s.get();
  }
  if (best == nullptr) {
    constexpr std::size_t kGranule = 4096;
    auto slot = std::make_unique<Slot>();
    // At least one granule: a zero-byte message still gets a real (non-null) staging address.
    slot->bytes = PinnedBytes(std::max<std::size_t>((bytes + kGranule - 1) / kGranule, 1) * kGranule);
    ++allocations_;
    best = slot.get();
    slots_.push_back(std::move(slot));
  }
  best->in_use = true;
  return *best;
}

std::size_t PinnedPool::pinned_bytes() const {
  std::size_t total = 0;
  for (const auto& s : slots_) total += s->bytes.size();
  return total;
}

namespace {

// Owns one staging slot for the life of a request and returns it to the pool, or retires it when the
// request is abandoned while the host transport may still use the memory.
class SlotLease {
 public:
  explicit SlotLease(PinnedPool::Slot& s) : slot_(&s) {}
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ~SlotLease() {
    if (settled_) {
      PinnedPool::release(*slot_);
    } else {
      PinnedPool::retire(*slot_);
    }
  }
  std::byte* data() const { return slot_->bytes.data(); }
  void settle() { settled_ = true; }  // the host transport is done with the memory

 private:
  PinnedPool::Slot* slot_;
  bool settled_ = false;
};

class StagedSendState final : public RequestState {
 public:
  StagedSendState(Transport& host, std::unique_ptr<SlotLease> lease)
      : host_(host), lease_(std::move(lease)) {}
  StagedSendState(const StagedSendState&) = delete;
  StagedSendState& operator=(const StagedSendState&) = delete;
  // Never posted (the host isend threw) or finished: the staging memory is free again.
  ~StagedSendState() override {
    if (!inner_.pending()) lease_->settle();
  }
  void start(Request inner) { inner_ = std::move(inner); }

  std::optional<std::size_t> poll() override {
    if (!host_.test(inner_)) return std::nullopt;
    lease_->settle();
    return inner_.bytes();
  }

 private:
  Transport& host_;
  std::unique_ptr<SlotLease> lease_;  // declared before inner_: the host request is dropped first
  Request inner_;
};

class StagedRecvState final : public RequestState {
 public:
  StagedRecvState(Transport& host, std::unique_ptr<SlotLease> lease, std::byte* device_dst, int device,
                  cudaStream_t stream)
      : host_(host), lease_(std::move(lease)), dst_(device_dst), device_(device), stream_(stream) {}
  StagedRecvState(const StagedRecvState&) = delete;
  StagedRecvState& operator=(const StagedRecvState&) = delete;
  ~StagedRecvState() override {
    if (!inner_.pending()) lease_->settle();
  }
  void start(Request inner) { inner_ = std::move(inner); }

  std::optional<std::size_t> poll() override {
    if (!host_.test(inner_)) return std::nullopt;
    lease_->settle();
    const std::size_t got = inner_.bytes();
    if (got > 0) {
      DeviceGuard guard(device_);
      TT_CUDA_CHECK(cudaMemcpyAsync(dst_, lease_->data(), got, cudaMemcpyHostToDevice, stream_));
      TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    return got;
  }

 private:
  Transport& host_;
  std::unique_ptr<SlotLease> lease_;
  Request inner_;
  std::byte* dst_;
  int device_;
  cudaStream_t stream_;
};

}  // namespace

StagedTransport::StagedTransport(Transport& host, int device)
    : host_(host), device_(device < 0 ? current_device() : device) {
  DeviceGuard guard(device_);
  stream_ = std::make_unique<Stream>();
  set_timeout(host.timeout());
  set_wait_policy(host.wait_policy());
}

Request StagedTransport::isend(int peer, std::span<const std::byte> device_data, int tag) {
  auto lease = std::make_unique<SlotLease>(pool_.acquire(device_data.size()));
  if (!device_data.empty()) {
    DeviceGuard guard(device_);
    // Synchronous on purpose: the caller may overwrite the device buffer once isend returns, and the
    // host transport reads staging right away.
    TT_CUDA_CHECK(cudaMemcpyAsync(lease->data(), device_data.data(), device_data.size(),
                                  cudaMemcpyDeviceToHost, stream_->get()));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
  }
  const std::span<const std::byte> staged(lease->data(), device_data.size());
  auto state = std::make_unique<StagedSendState>(host_, std::move(lease));
  state->start(host_.isend(peer, staged, tag));
  return Request(std::move(state), Op::Send, peer, tag, device_data.size());
}

Request StagedTransport::irecv(int peer, std::span<std::byte> device_buffer, int tag) {
  auto lease = std::make_unique<SlotLease>(pool_.acquire(device_buffer.size()));
  const std::span<std::byte> staged(lease->data(), device_buffer.size());
  auto state = std::make_unique<StagedRecvState>(host_, std::move(lease), device_buffer.data(), device_,
                                                 stream_->get());
  state->start(host_.irecv(peer, staged, tag));
  return Request(std::move(state), Op::Recv, peer, tag, device_buffer.size());
}

}  // namespace tt::comm::cuda
