// AES-GCM on the GPU (AES-256 or AES-128, 12-byte nonce, 16-byte tag), byte-identical to OpenSSL and
// to tee::Aead::seal_append_tag / try_open_with_tag for the same key, nonce, AAD and plaintext.
//
// A batch of independent messages is processed by two kernels: one does counter mode and the
// per-tile GHASH partial sums for every message at once, a small one per message combines the
// partials with powers of H and writes (seal) or checks (open) the tag. See gcm_math.h.
//
// Buffers are device memory and stay where they are; only the small per-message descriptors travel
// from the host. In place (in == out) is supported; a shifted overlap is not. Any alignment works;
// 16-byte aligned in/out take the fast path.
//
// Errors: CUDA failures throw RunError (base/cuda/cuda_check.h) naming the call; bad arguments throw
// std::invalid_argument or std::length_error. A GpuAesGcm is not thread-safe (one per stream).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tt::tee {
class StreamPosition;  // tee/crypto/stream_position.h
}

namespace tt::tee::cuda {

inline constexpr std::size_t kGpuTagSize = 16;
inline constexpr std::size_t kGpuMaxAad = 96;

struct GpuMessage {
  const std::byte* in;  // device: plaintext (seal, length bytes) or ciphertext||tag (open, length + 16)
  std::byte* out;       // device: ciphertext||tag (seal, length + 16) or plaintext (open, length)
  std::size_t length;   // plaintext bytes: any size, 0 included, up to 2^36 - 32 (SP 800-38D)
  std::array<std::uint8_t, 12> nonce;        // set by place_at: the nonce of a stream position
  std::array<std::uint8_t, kGpuMaxAad> aad;  // the first aad_len bytes are authenticated
  std::uint32_t aad_len;                     // <= 96
};

// Seals (or opens) `m` at `at`: sets its nonce as tee::Aead does for the same position, so a message
// sealed on the GPU is byte-identical to the CPU's. Callers outside tee/ never write the nonce.
void place_at(GpuMessage& m, const StreamPosition& at);

class GpuAesGcm {
 public:
  // `key`: 32 bytes (AES-256-GCM) or 16 bytes (AES-128-GCM); the caller keeps (and wipes) its copy.
  // `stream`: a cudaStream_t, nullptr for the legacy default stream. Uses the current device.
  GpuAesGcm(std::span<const std::uint8_t> key, void* stream);
  // Waits for this object's work on its stream, then wipes and frees the device key tables.
  ~GpuAesGcm();
  GpuAesGcm(GpuAesGcm&&) noexcept;
  GpuAesGcm& operator=(GpuAesGcm&&) noexcept;
  GpuAesGcm(const GpuAesGcm&) = delete;
  GpuAesGcm& operator=(const GpuAesGcm&) = delete;

  // Enqueues encryption + tags of every message on the stream and returns. Input buffers must stay
  // valid and unchanged until the stream reaches this point. May wait for the previous call's
  // descriptor upload (one call of pipelining) but never for this call's kernels.
  void seal_async(std::span<const GpuMessage> msgs);
  // Verifies and decrypts every message; returns ok per message (waits for the stream). A message
  // whose tag does not match gets its whole plaintext output zeroed before this returns; the other
  // messages are unaffected.
  std::vector<bool> open(std::span<const GpuMessage> msgs);
  // Waits for everything enqueued on the stream.
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tt::tee::cuda
