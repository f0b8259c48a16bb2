#include "tee/cuda/gcm_key.h"

#include <openssl/crypto.h>

#include <stdexcept>
#include <string>

namespace tt::tee::cuda::gcm {

namespace {

constexpr AesTables kTables = make_aes_tables();

std::uint32_t sub_word(std::uint32_t w) {
  return (std::uint32_t{kTables.sbox[w >> 24]} << 24) |
         (std::uint32_t{kTables.sbox[(w >> 16) & 0xff]} << 16) |
         (std::uint32_t{kTables.sbox[(w >> 8) & 0xff]} << 8) | kTables.sbox[w & 0xff];
}

}  // namespace

int aes_expand_key(std::span<const std::uint8_t> key, RoundKeys& rk) {
  if (key.size() != 16 && key.size() != 32)
    throw std::invalid_argument("GPU AES-GCM needs a 16- or 32-byte key, got " + std::to_string(key.size()));
  const std::size_t nk = key.size() / 4;
  const int nr = static_cast<int>(nk) + 6;
  const std::size_t words = 4 * static_cast<std::size_t>(nr + 1);
  for (std::size_t i = 0; i < nk; ++i)
    rk.w[i] = (std::uint32_t{key[4 * i]} << 24) | (std::uint32_t{key[4 * i + 1]} << 16) |
              (std::uint32_t{key[4 * i + 2]} << 8) | key[4 * i + 3];
  std::uint8_t rcon = 1;
  for (std::size_t i = nk; i < words; ++i) {
    std::uint32_t t = rk.w[i - 1];
    if (i % nk == 0) {
      t = sub_word((t << 8) | (t >> 24)) ^ (std::uint32_t{rcon} << 24);
      rcon = xtime(rcon);
    } else if (nk > 6 && i % nk == 4) {
      t = sub_word(t);
    }
    rk.w[i] = rk.w[i - nk] ^ t;
  }
  for (std::size_t i = words; i < kMaxRoundKeyWords; ++i) rk.w[i] = 0;
  return nr;
}

KeyMaterial::KeyMaterial(std::span<const std::uint8_t> key) : image_(std::make_unique<DeviceKey>()) {
  rounds_ = aes_expand_key(key, rk_);
  DeviceKey& d = *image_;
  for (int i = 0; i < 256; ++i) d.te0[i] = kTables.te0[static_cast<std::size_t>(i)];
  const PlainTe te{d.te0};
  const std::uint32_t zero[3] = {0, 0, 0};
  // H = E_K(0^128): the counter-block helper with IV 0 and counter 0 is exactly that block.
  d.h = rounds_ == 10 ? aes_ctr_block<10>(rk_, te, zero, 0) : aes_ctr_block<14>(rk_, te, zero, 0);
  d.hpow[0] = gf_one();
  for (std::uint32_t i = 1; i <= kLanes; ++i) d.hpow[i] = gf_mul(d.hpow[i - 1], d.h);
  d.pow2[0] = d.h;
  for (std::uint32_t k = 1; k < kPow2Count; ++k) d.pow2[k] = gf_mul(d.pow2[k - 1], d.pow2[k - 1]);
  // Byte tables of M = H^32, built from the 8 single-bit entries per position by linearity.
  const Block128 m = d.hpow[kLanes];
  for (std::uint32_t pos = 0; pos < 16; ++pos) {
    Block128* row = d.h32_table + pos * 256;
    Block128 bit[8];
    for (std::uint32_t j = 0; j < 8; ++j) {
      const std::uint64_t one = std::uint64_t{0x80} >> j << (56 - 8 * (pos & 7));
      bit[j] = gf_mul(pos < 8 ? Block128{one, 0} : Block128{0, one}, m);
    }
    for (std::uint32_t b = 0; b < 256; ++b) {
      Block128 acc{0, 0};
      for (std::uint32_t j = 0; j < 8; ++j)
        if (b & (0x80u >> j)) acc = bxor(acc, bit[j]);
      row[b] = acc;
    }
  }
}

KeyMaterial::~KeyMaterial() {
  OPENSSL_cleanse(&rk_, sizeof rk_);
  if (image_) OPENSSL_cleanse(image_.get(), sizeof(DeviceKey));
}

}  // namespace tt::tee::cuda::gcm
