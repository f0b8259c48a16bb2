// GPU AES-GCM: kernels and the host driver. The arithmetic is in gcm_math.h (tested on the host).
#include <cuda_runtime.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "base/cuda/cuda_check.h"
#include "base/cuda/device.h"
#include "base/cuda/device_memory.h"
#include "tee/cuda/gcm_key.h"
#include "tee/cuda/gcm_math.h"
#include "tee/cuda/gpu_aead.h"

namespace tt::tee::cuda {

namespace {

using gcm::Block128;
using gcm::DeviceKey;
using gcm::kLanes;
using gcm::MsgView;
using gcm::RoundKeys;
using ::tt::cuda::DeviceBytes;
using ::tt::cuda::DeviceGuard;
using ::tt::cuda::PinnedBytes;

constexpr unsigned kCryptThreads = 256;
constexpr unsigned kFinishThreads = 256;
constexpr std::size_t kTeShared = 256 * kLanes * sizeof(std::uint32_t);  // 32 KiB: Te0 once per bank
constexpr std::size_t kTabShared = 16 * 256 * sizeof(Block128);          // 64 KiB: byte tables of H^32
constexpr std::size_t kCryptShared = kTeShared + kTabShared;
constexpr std::uint64_t kMaxLength = (std::uint64_t{1} << 36) - 32;  // SP 800-38D, as tee::Aead

// One message as the kernels see it (uploaded per call, ~160 bytes each).
struct MsgDesc {
  MsgView view;
  std::uint64_t length;
  std::uint32_t tile_begin;  // index of its first tile in the batch-wide tile numbering
  std::uint32_t num_tiles;
  std::uint32_t aad_len;
  std::uint8_t aad[gcm::kMaxAad];
};

// Kernel arguments live in the constant bank: the round keys are read by every AES round of every
// thread, and constant-bank operands cost no shared-memory bandwidth.
struct CryptArgs {
  RoundKeys rk;
  const MsgDesc* msgs;  // [num_msgs]
  const DeviceKey* key;
  Block128* partials;  // [total_tiles] tile values
  std::uint32_t num_msgs;
  std::uint32_t total_tiles;
};

struct FinishArgs {
  RoundKeys rk;
  const MsgDesc* msgs;  // [gridDim.x]
  const DeviceKey* key;
  const Block128* partials;  // [total_tiles]
  std::uint32_t* ok;         // [gridDim.x], written by open only
};

// Te0 replicated 32 times, laid out [byte][lane]: lane l always reads bank l, so the 16 data-dependent
// lookups of an AES round never conflict (Tezcan's layout for T-table AES on GPUs).
struct SharedTe {
  const std::uint32_t* t;
  std::uint32_t lane;
  TT_HD std::uint32_t operator()(std::uint32_t x) const { return t[(x << 5) | lane]; }
};

// The last message whose first tile is <= tile (messages without tiles share tile_begin with the
// next one, so "last" picks the one that owns the tile).
__device__ std::uint32_t find_message(const MsgDesc* msgs, std::uint32_t n, std::uint32_t tile) {
  std::uint32_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (msgs[mid].tile_begin <= tile)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Counter mode + per-tile GHASH values for every tile of the batch. One warp per tile, grid-stride.
template <int Nr, bool kDecrypt>
__global__ void __launch_bounds__(kCryptThreads, 2) crypt_kernel(const __grid_constant__ CryptArgs a) {
  extern __shared__ uint4 smem[];  // [kTeShared | kTabShared] bytes
  auto* te_s = reinterpret_cast<std::uint32_t*>(smem);
  uint4* tab_s = smem + kTeShared / sizeof(uint4);
  for (unsigned i = threadIdx.x; i < 256 * kLanes; i += blockDim.x) te_s[i] = a.key->te0[i / kLanes];
  const auto* tab_g = reinterpret_cast<const uint4*>(a.key->h32_table);
  for (unsigned i = threadIdx.x; i < 16 * 256; i += blockDim.x) tab_s[i] = tab_g[i];
  __syncthreads();

  const std::uint32_t lane = threadIdx.x % kLanes;
  const SharedTe te{te_s, lane};
  const gcm::ByteTable h32{reinterpret_cast<const Block128*>(tab_s)};
  const std::uint32_t warps = gridDim.x * blockDim.x / kLanes;
  for (std::uint32_t tile = (blockIdx.x * blockDim.x + threadIdx.x) / kLanes; tile < a.total_tiles;
       tile += warps) {
    const std::uint32_t m = find_message(a.msgs, a.num_msgs, tile);
    const MsgView view = a.msgs[m].view;
    const std::uint32_t local = tile - a.msgs[m].tile_begin;
    Block128 p = gcm::lane_tile<Nr, kDecrypt>(view, local, lane, a.rk, te, h32, a.key->hpow);
    for (unsigned off = kLanes / 2; off > 0; off >>= 1) {
      p.hi ^= __shfl_xor_sync(0xffffffffu, p.hi, off);
      p.lo ^= __shfl_xor_sync(0xffffffffu, p.lo, off);
    }
    if (lane == 0) a.partials[tile] = p;
  }
}

// One block per message: combine its tile values, then write (seal) or check (open) the tag. A
// failed open zeroes the message's plaintext here, in the same stream position, before open returns.
template <int Nr, bool kDecrypt>
__global__ void __launch_bounds__(kFinishThreads) finish_kernel(const __grid_constant__ FinishArgs a) {
  __shared__ Block128 red[kFinishThreads];
  __shared__ std::uint32_t ok_s;
  const MsgDesc& d = a.msgs[blockIdx.x];
  const unsigned t = threadIdx.x;
  red[t] = gcm::finish_group(t, kFinishThreads, d.num_tiles, gcm::PartialArray{a.partials + d.tile_begin},
                             a.key->pow2);
  __syncthreads();
  for (unsigned s = kFinishThreads / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = gcm::bxor(red[t], red[t + s]);
    __syncthreads();
  }
  if (t == 0) {
    const Block128 tag = gcm::final_tag<Nr>(red[0], d.view, d.aad, d.aad_len, d.length, a.rk,
                                            gcm::PlainTe{a.key->te0}, a.key->h, a.key->pow2);
    if constexpr (kDecrypt) {
      // The whole difference is folded before deciding: no early exit on the first wrong byte.
      ok_s = gcm::is_zero(gcm::bxor(tag, gcm::load_block_bytes(d.view.in + d.length, 16))) ? 1u : 0u;
      a.ok[blockIdx.x] = ok_s;
    } else {
      gcm::store_block_bytes(d.view.out + d.length, tag, 16);
    }
  }
  if constexpr (kDecrypt) {
    __syncthreads();
    if (ok_s) return;
    std::uint8_t* out = d.view.out;
    std::uint64_t head = 0;
    if (d.view.aligned) {
      head = d.length / 16 * 16;
      for (std::uint64_t i = t; i < d.length / 16; i += kFinishThreads)
        reinterpret_cast<uint4*>(out)[i] = make_uint4(0, 0, 0, 0);
    }
    for (std::uint64_t i = head + t; i < d.length; i += kFinishThreads) out[i] = 0;
  }
}

class Event {
 public:
  Event() { TT_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

template <int Nr>
int crypt_blocks_per_sm() {
  int fit = std::numeric_limits<int>::max();
  auto query = [&fit](const void* kernel) {
    TT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kCryptShared)));
    int n = 0;
    TT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kCryptThreads, kCryptShared));
    fit = std::min(fit, n);
  };
  query(reinterpret_cast<const void*>(&crypt_kernel<Nr, false>));
  query(reinterpret_cast<const void*>(&crypt_kernel<Nr, true>));
  if (fit <= 0) throw RunError("GPU AES-GCM: the counter-mode kernel does not fit on this GPU");
  return fit;
}

}  // namespace

struct GpuAesGcm::Impl {
  Impl(std::span<const std::uint8_t> key, void* s) : stream(static_cast<cudaStream_t>(s)), km(key) {
    TT_CUDA_CHECK(cudaGetDevice(&device));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
    blocks_per_sm = km.rounds() == 10 ? crypt_blocks_per_sm<10>() : crypt_blocks_per_sm<14>();
    key_dev = DeviceBytes(sizeof(DeviceKey));
    // Synchronous copy from pageable memory: the host image may be wiped as soon as this returns.
    TT_CUDA_CHECK(cudaMemcpy(key_dev.get(), &km.image(), sizeof(DeviceKey), cudaMemcpyHostToDevice));
    // ... which may return before the DMA lands, and the legacy stream it ran on does not order a
    // non-blocking `stream`: finish it before the first kernel reads the tables.
    TT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~Impl() {
    // Kernels may still read the key tables and descriptors: wait, then wipe the key tables.
    (void)cudaStreamSynchronize(stream);
    if (key_dev.get()) (void)cudaMemsetAsync(key_dev.get(), 0, key_dev.size(), stream);
    (void)cudaStreamSynchronize(stream);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Validates the batch, uploads its descriptors and returns the batch's tile count.
  std::uint32_t stage(std::span<const GpuMessage> msgs, bool open);
  template <int Nr, bool kDecrypt>
  void launch(std::uint32_t num_msgs, std::uint32_t total_tiles);
  void run(std::span<const GpuMessage> msgs, bool open);

  cudaStream_t stream;
  int device = 0;
  int sm_count = 0;
  int blocks_per_sm = 0;
  gcm::KeyMaterial km;
  DeviceBytes key_dev;       // DeviceKey
  std::size_t capacity = 0;  // messages the buffers below hold
  PinnedBytes desc_host;     // MsgDesc[capacity], staging for the upload
  DeviceBytes desc_dev;      // MsgDesc[capacity]
  Event staged;              // recorded after the upload out of desc_host
  DeviceBytes partials;      // Block128[tiles]
  DeviceBytes ok_dev;        // uint32[capacity]
  PinnedBytes ok_host;       // uint32[capacity]
};

std::uint32_t GpuAesGcm::Impl::stage(std::span<const GpuMessage> msgs, bool open) {
  std::uint64_t tiles = 0;
  for (const GpuMessage& m : msgs) {
    if (m.aad_len > kGpuMaxAad)
      throw std::invalid_argument("GPU AES-GCM: associated data longer than 96 bytes (" +
                                  std::to_string(m.aad_len) + ")");
    if (m.length > kMaxLength) throw std::length_error("GPU AES-GCM: message longer than AES-GCM allows");
    if (!m.out && (m.length > 0 || !open)) throw std::invalid_argument("GPU AES-GCM: null output buffer");
    if (!m.in && (m.length > 0 || open)) throw std::invalid_argument("GPU AES-GCM: null input buffer");
    tiles += gcm::tile_layout(m.length).num_tiles;
  }
  if (tiles > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("GPU AES-GCM: batch too large for one call (split it)");

  // Growing frees buffers that enqueued work may still use: wait for the stream first.
  const bool grow_msgs = msgs.size() > capacity;
  const bool grow_tiles = tiles * sizeof(Block128) > partials.size();
  if (grow_msgs || grow_tiles) TT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (grow_msgs) {
    capacity = std::max(msgs.size(), 2 * capacity);
    desc_host = PinnedBytes(capacity * sizeof(MsgDesc));
    desc_dev = DeviceBytes(capacity * sizeof(MsgDesc));
    ok_dev = DeviceBytes(capacity * sizeof(std::uint32_t));
    ok_host = PinnedBytes(capacity * sizeof(std::uint32_t));
  }
  if (grow_tiles)
    partials = DeviceBytes(std::max<std::size_t>(tiles * sizeof(Block128), 2 * partials.size()));

  // The previous upload out of desc_host must be done before it is overwritten.
  TT_CUDA_CHECK(cudaEventSynchronize(staged.get()));
  auto* descs = desc_host.as<MsgDesc>();
  std::uint32_t tile_begin = 0;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const GpuMessage& m = msgs[i];
    const gcm::TileLayout layout = gcm::tile_layout(m.length);
    MsgDesc d{};
    d.view = gcm::make_msg_view(reinterpret_cast<const std::uint8_t*>(m.in),
                                reinterpret_cast<std::uint8_t*>(m.out), m.length, m.nonce.data());
    d.length = m.length;
    d.tile_begin = tile_begin;
    d.num_tiles = layout.num_tiles;
    d.aad_len = m.aad_len;
    std::memcpy(d.aad, m.aad.data(), m.aad_len);
    descs[i] = d;
    tile_begin += layout.num_tiles;
  }
  TT_CUDA_CHECK(
      cudaMemcpyAsync(desc_dev.get(), descs, msgs.size() * sizeof(MsgDesc), cudaMemcpyHostToDevice, stream));
  TT_CUDA_CHECK(cudaEventRecord(staged.get(), stream));
  return static_cast<std::uint32_t>(tiles);
}

template <int Nr, bool kDecrypt>
void GpuAesGcm::Impl::launch(std::uint32_t num_msgs, std::uint32_t total_tiles) {
  if (total_tiles > 0) {
    CryptArgs a{km.round_keys(),
                desc_dev.as<const MsgDesc>(),
                key_dev.as<const DeviceKey>(),
                partials.as<Block128>(),
                num_msgs,
                total_tiles};
    constexpr std::uint32_t kWarpsPerBlock = kCryptThreads / kLanes;
    const std::uint64_t wanted = (std::uint64_t{total_tiles} + kWarpsPerBlock - 1) / kWarpsPerBlock;
    const auto grid = static_cast<unsigned>(std::min<std::uint64_t>(
        wanted, static_cast<std::uint64_t>(sm_count) * static_cast<std::uint64_t>(blocks_per_sm)));
    crypt_kernel<Nr, kDecrypt><<<grid, kCryptThreads, kCryptShared, stream>>>(a);
    OPENSSL_cleanse(&a.rk, sizeof a.rk);  // the launch copied the arguments
    TT_CUDA_CHECK_LAUNCH();
  }
  FinishArgs f{km.round_keys(), desc_dev.as<const MsgDesc>(), key_dev.as<const DeviceKey>(),
               partials.as<const Block128>(), ok_dev.as<std::uint32_t>()};
  finish_kernel<Nr, kDecrypt><<<num_msgs, kFinishThreads, 0, stream>>>(f);
  OPENSSL_cleanse(&f.rk, sizeof f.rk);
  TT_CUDA_CHECK_LAUNCH();
}

void GpuAesGcm::Impl::run(std::span<const GpuMessage> msgs, bool open) {
  if (msgs.empty()) return;
  if (msgs.size() > std::numeric_limits<std::int32_t>::max())
    throw std::length_error("GPU AES-GCM: too many messages in one batch");
  const DeviceGuard scope(device);
  const std::uint32_t tiles = stage(msgs, open);
  const auto n = static_cast<std::uint32_t>(msgs.size());
  if (km.rounds() == 10)
    open ? launch<10, true>(n, tiles) : launch<10, false>(n, tiles);
  else
    open ? launch<14, true>(n, tiles) : launch<14, false>(n, tiles);
}

GpuAesGcm::GpuAesGcm(std::span<const std::uint8_t> key, void* stream)
    : impl_(std::make_unique<Impl>(key, stream)) {}
GpuAesGcm::~GpuAesGcm() = default;
GpuAesGcm::GpuAesGcm(GpuAesGcm&&) noexcept = default;
GpuAesGcm& GpuAesGcm::operator=(GpuAesGcm&&) noexcept = default;

void GpuAesGcm::seal_async(std::span<const GpuMessage> msgs) {
  if (!impl_) throw std::logic_error("GpuAesGcm used after being moved from");
  impl_->run(msgs, false);
}

std::vector<bool> GpuAesGcm::open(std::span<const GpuMessage> msgs) {
  if (!impl_) throw std::logic_error("GpuAesGcm used after being moved from");
  std::vector<bool> ok(msgs.size(), false);
  if (msgs.empty()) return ok;
  impl_->run(msgs, true);
  const DeviceGuard scope(impl_->device);
  TT_CUDA_CHECK(cudaMemcpyAsync(impl_->ok_host.get(), impl_->ok_dev.get(),
                                msgs.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, impl_->stream));
  TT_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
  const auto* flags = impl_->ok_host.as<const std::uint32_t>();
  for (std::size_t i = 0; i < msgs.size(); ++i) ok[i] = flags[i] == 1;
  return ok;
}

void GpuAesGcm::synchronize() {
  if (!impl_) return;
  const DeviceGuard scope(impl_->device);
  TT_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

}  // namespace tt::tee::cuda
