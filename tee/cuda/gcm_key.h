// Per-key precomputation for the GPU AES-GCM, done once on the host: the AES key schedule, the hash
// key H = E_K(0^128) and the powers and tables of H that the kernels read. Plain C++ (no CUDA), so
// the host tests build the very same tables the GPU gets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tee/cuda/gcm_math.h"

namespace tt::tee::cuda::gcm {

// The device-resident, read-only part of a key, uploaded as one allocation (about 66 KiB).
struct DeviceKey {
  std::uint32_t te0[256];        // AES table (public)
  Block128 hpow[kLanes + 1];     // H^0 .. H^32
  Block128 pow2[kPow2Count];     // H^(2^k)
  Block128 h32_table[16 * 256];  // byte tables of H^32: [position][byte value]
  Block128 h;                    // H itself
};

// FIPS-197 key expansion; returns the number of rounds (10 or 14). Key must be 16 or 32 bytes.
int aes_expand_key(std::span<const std::uint8_t> key, RoundKeys& rk);

// Key schedule plus the DeviceKey image. Wipes both when destroyed (they are key material).
class KeyMaterial {
 public:
  // Throws std::invalid_argument unless the key is 16 (AES-128) or 32 (AES-256) bytes.
  explicit KeyMaterial(std::span<const std::uint8_t> key);
  ~KeyMaterial();
  KeyMaterial(const KeyMaterial&) = delete;
  KeyMaterial& operator=(const KeyMaterial&) = delete;

  int rounds() const { return rounds_; }
  const RoundKeys& round_keys() const { return rk_; }
  const DeviceKey& image() const { return *image_; }

 private:
  int rounds_ = 0;
  RoundKeys rk_{};
  std::unique_ptr<DeviceKey> image_;
};

}  // namespace tt::tee::cuda::gcm
