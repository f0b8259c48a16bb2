#include "comm/cuda/gpu_sealing_codec.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "comm/cuda/small_copies.h"

namespace tt::comm::cuda {

namespace {

constexpr std::size_t kAlign = 16;

std::size_t round_up(std::size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// Byte offset of the header area in the staging buffers, for n messages.
std::size_t header_offset(std::size_t n) {
  return round_up(n * sizeof(SmallCopy));
}

}  // namespace

GpuSealingCodec::GpuSealingCodec(SealedChannel& host, cudaStream_t stream, std::size_t parallelism,
                                 Profiler* profiler)
    : streams_(host.streams()),
      stream_(stream),
      device_(current_device()),
      parallelism_(std::max<std::size_t>(parallelism, 1)),
      prof_(profiler) {
  // Our GPU kernels are AES-GCM only: a ChaCha20-Poly1305 stream key sealed here would be used with a
  // second cipher (one key, two ciphers) and produce messages no CPU peer of that cipher can open.
  if (streams_.options().cipher == tee::Cipher::ChaCha20Poly1305)
    throw InputError(
        "--cipher chacha20-poly1305 has no GPU implementation; use aes-256-gcm or aes-128-gcm, or "
        "--tee-device-crypto off to seal on the host");
}

GpuSealingCodec::~GpuSealingCodec() = default;

std::string GpuSealingCodec::name() const {
  return "gpu-sealed(" + std::string(tee::cipher_name(streams_.options().cipher)) + ")";
}

// One GpuAesGcm per key stream, rebuilt when the stream moves to a new epoch (its key tables are
// derived on the host and uploaded once per key).
tee::cuda::GpuAesGcm& GpuSealingCodec::aead_for(const SealTicket& t) {
  auto it = std::find_if(keys_.begin(), keys_.end(), [&](const KeySlot& k) { return k.stream == t.stream; });
  if (it == keys_.end()) it = keys_.insert(keys_.end(), KeySlot{t.stream, 0, std::nullopt});
  if (!it->aead || it->epoch != t.key->epoch) {
    it->aead.reset();  // waits for the old key's work, wipes its tables
    it->aead.emplace(t.key->key.view(), stream_);
    it->epoch = t.key->epoch;
  }
  return *it->aead;
}

template <typename Fn>
void GpuSealingCodec::for_each_key(std::span<const Job> jobs, Fn&& fn) {
  messages_.clear();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const SealTicket& t = tickets_[i];
    tee::cuda::GpuMessage m{};
    m.in = jobs[i].in;
    m.out = jobs[i].out;
    m.length = jobs[i].plain_bytes;
    tee::cuda::place_at(m, t.at);
    std::copy(t.aad.begin(), t.aad.end(), m.aad.begin());
    m.aad_len = static_cast<std::uint32_t>(t.aad.size());
    messages_.push_back(m);
  }
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= jobs.size(); ++i) {
    if (i < jobs.size() && tickets_[i].key == tickets_[begin].key) continue;
    fn(aead_for(tickets_[begin]), std::span(messages_).subspan(begin, i - begin));
    begin = i;
  }
}

// Sizes the staging buffers for n messages and draws every job's ticket, in job order.
GpuSealingCodec::Batch GpuSealingCodec::begin_batch(std::span<const Job> jobs, bool sealing) {
  Batch b;
  const std::size_t n = jobs.size();
  b.staging = header_offset(n) + n * kSealHeaderSize;
  if (host_.size() < b.staging) host_ = PinnedBytes(b.staging);
  dev_.reserve(b.staging);
  b.descs = reinterpret_cast<SmallCopy*>(host_.data());
  b.host_headers = host_.data() + header_offset(n);
  b.dev_headers = dev_.data() + header_offset(n);
  tickets_.clear();
  for (const Job& j : jobs) {
    tickets_.push_back(streams_.next(j.ctx, j.plain_bytes, sealing));
    b.bytes += j.plain_bytes;
    b.ring += is_allreduce_phase(j.ctx.phase) ? 1 : 0;
  }
  return b;
}

void GpuSealingCodec::seal(const MessageContext& ctx, std::span<const std::byte> plain,
                           std::span<std::byte> wire) {
  const SealJob job{ctx, plain, wire};
  seal_batch(std::span(&job, 1));
}

void GpuSealingCodec::open(const MessageContext& ctx, std::span<const std::byte> wire,
                           std::span<std::byte> plain) {
  const OpenJob job{ctx, wire, plain};
  open_batch(std::span(&job, 1));
}

// Every wire span is its plaintext plus the seal overhead: the kernels read and write exactly that.
void GpuSealingCodec::check_sizes(const MessageContext& ctx, std::size_t plain, std::size_t wire) {
  if (wire != plain + kSealOverhead)
    throw RunError("gpu sealing codec: " + std::to_string(wire) + " wire bytes for " + std::to_string(plain) +
                   " plaintext bytes at " + to_string(ctx));
}

void GpuSealingCodec::seal_batch(std::span<const SealJob> jobs) {
  jobs_.clear();
  for (const SealJob& j : jobs) {
    check_sizes(j.ctx, j.plain.size(), j.wire.size());
    jobs_.push_back({j.ctx, j.plain.data(), j.wire.data(), j.plain.size()});
  }
  seal_jobs(jobs_);
}

void GpuSealingCodec::open_batch(std::span<const OpenJob> jobs) {
  jobs_.clear();
  for (const OpenJob& j : jobs) {
    check_sizes(j.ctx, j.plain.size(), j.wire.size());
    jobs_.push_back({j.ctx, j.wire.data(), j.plain.data(), j.plain.size()});
  }
  open_jobs(jobs_);
}

void GpuSealingCodec::seal_jobs(std::span<const Job> jobs) {
  if (jobs.empty()) return;
  DeviceGuard guard(device_);
  ScopedPhase timer(prof_, Phase::Seal, Lane::Crypto, "seal");
  const Batch b = begin_batch(jobs, true);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    std::memcpy(b.host_headers + i * kSealHeaderSize, tickets_[i].header.data(), kSealHeaderSize);
    // The header goes after the tag: wire = ciphertext || tag || header.
    b.descs[i] = {b.dev_headers + i * kSealHeaderSize, j.out + j.plain_bytes + tee::kTagSize,
                  static_cast<std::uint32_t>(kSealHeaderSize)};
  }
  // Descriptors and headers in one upload; the kernel reads the headers from the device mirror.
  TT_CUDA_CHECK(cudaMemcpyAsync(dev_.data(), host_.data(), b.staging, cudaMemcpyHostToDevice, stream_));
  launch_small_copies(dev_.as<SmallCopy>(), jobs.size(), stream_);
  for_each_key(jobs, [](tee::cuda::GpuAesGcm& aead, std::span<const tee::cuda::GpuMessage> msgs) {
    aead.seal_async(msgs);
  });
  TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  streams_.count(true, jobs.size(), b.ring, b.bytes);
}

void GpuSealingCodec::open_jobs(std::span<const Job> jobs) {
  if (jobs.empty()) return;
  DeviceGuard guard(device_);
  ScopedPhase timer(prof_, Phase::Open, Lane::Crypto, "open");
  const std::size_t n = jobs.size();
  const Batch b = begin_batch(jobs, false);
  for (std::size_t i = 0; i < n; ++i) {
    b.descs[i] = {jobs[i].in + jobs[i].plain_bytes + tee::kTagSize, b.dev_headers + i * kSealHeaderSize,
                  static_cast<std::uint32_t>(kSealHeaderSize)};
  }
  // Gather the clear headers for the host (read only to explain a failure, and checked after a good
  // open so that no wire byte can change unnoticed), then open; open() waits for the stream.
  TT_CUDA_CHECK(
      cudaMemcpyAsync(dev_.data(), host_.data(), header_offset(n), cudaMemcpyHostToDevice, stream_));
  launch_small_copies(dev_.as<SmallCopy>(), n, stream_);
  TT_CUDA_CHECK(
      cudaMemcpyAsync(b.host_headers, b.dev_headers, n * kSealHeaderSize, cudaMemcpyDeviceToHost, stream_));
  ok_.clear();
  for_each_key(jobs, [this](tee::cuda::GpuAesGcm& aead, std::span<const tee::cuda::GpuMessage> msgs) {
    const std::vector<bool> ok = aead.open(msgs);
    ok_.insert(ok_.end(), ok.begin(), ok.end());
  });
  TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (std::size_t i = 0; i < n; ++i) {
    const std::string reason = SealStreams::open_failure(
        ok_[i], reinterpret_cast<const std::uint8_t*>(b.host_headers + i * kSealHeaderSize), tickets_[i]);
    if (reason.empty()) continue;
    if (ok_[i]) {  // opened, but the clear header was changed: the plaintext must not be used either
      TT_CUDA_CHECK(cudaMemsetAsync(jobs[i].out, 0, jobs[i].plain_bytes, stream_));
      TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    throw streams_.failure(tickets_[i].ctx, reason);
  }
  streams_.count(false, n, b.ring, b.bytes);
}

}  // namespace tt::comm::cuda
