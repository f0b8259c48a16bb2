// Inside tee/ only (the layering test refuses an include of tee/detail/ from any other folder): the
// 96-bit AEAD nonce and the AEAD that takes one. Everything above tee/ seals at a StreamPosition
// (tee/crypto/stream_position.h) through tee::Aead, or through a sealed file, which builds its own nonces.
//
// 96-bit deterministic nonces: 32-bit origin id || 64-bit per-origin counter, both big-endian.
//
// Why a nonce never repeats under one key:
//  1. Each key (one ratchet epoch of one link or group, or one sealed file) is used by a known set
//     of senders, and each sender has its own origin id (its rank; sealed files use their own
//     derived scheme, see sealed_file.h). Two senders therefore never produce the same 32-bit prefix.
//  2. Each origin draws positions from exactly one MessageCounter per key, whose counter only goes up
//     and throws instead of wrapping, so one origin never produces the same 64-bit suffix twice.
//  3. A new key (rekey, restart, new file) starts a new counter, never an old one under a new key's
//     name: the ratchet derives a fresh key for every epoch, so counters may restart from 0.
// The caller owns invariants 1 and 3 (one counter per origin per key); MessageCounter enforces 2, and
// a StreamPosition can only come from one, so no caller can hand the AEAD a nonce of its own making.
// Random nonces are avoided on purpose: they cost an RNG call per message and, at 96 bits, cap a
// key at 2^32 messages (SP 800-38D §8.3); a counter has neither cost.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tee/bytes.h"
#include "tee/crypto/aead.h"
#include "tee/crypto/stream_position.h"

struct evp_cipher_ctx_st;  // OpenSSL's EVP_CIPHER_CTX
struct evp_cipher_st;      // OpenSSL's EVP_CIPHER

namespace tt::tee::detail {

inline constexpr std::size_t kNonceSize = 12;

struct Nonce {
  std::array<std::uint8_t, kNonceSize> bytes{};

  static Nonce make(std::uint32_t origin, std::uint64_t counter) {
    Nonce n;
    store_be32(n.bytes.data(), origin);
    store_be64(n.bytes.data() + 4, counter);
    return n;
  }
  std::uint32_t origin() const { return load_be32(bytes.data()); }
  std::uint64_t counter() const { return load_be64(bytes.data() + 4); }
  friend bool operator==(const Nonce&, const Nonce&) = default;
};

// The nonce of a message at `at`: be32(origin) || be64(counter).
inline Nonce nonce_at(const StreamPosition& at) {
  return Nonce::make(at.origin(), at.counter());
}

// The AEAD over OpenSSL EVP that tee::Aead wraps (error policy and sizes as tee::Aead documents). The
// nonce must never repeat under this key: see above.
class NonceAead {
 public:
  NonceAead(Cipher cipher, ByteView key);
  ~NonceAead();
  NonceAead(NonceAead&&) noexcept;
  NonceAead& operator=(NonceAead&&) noexcept;
  NonceAead(const NonceAead&) = delete;
  NonceAead& operator=(const NonceAead&) = delete;

  Cipher cipher() const { return cipher_; }

  void seal(const Nonce& nonce, ByteView aad, ByteView plaintext, MutableByteView ciphertext, Tag& tag);
  [[nodiscard]] bool try_open(const Nonce& nonce, ByteView aad, ByteView ciphertext, const Tag& tag,
                              MutableByteView plaintext);
  void open(const Nonce& nonce, ByteView aad, ByteView ciphertext, const Tag& tag, MutableByteView plaintext,
            std::string_view context = "AEAD message");
  void seal_append_tag(const Nonce& nonce, ByteView aad, ByteView plaintext, MutableByteView sealed);
  [[nodiscard]] bool try_open_with_tag(const Nonce& nonce, ByteView aad, ByteView sealed,
                                       MutableByteView plaintext);

 private:
  struct CtxFree {
    void operator()(evp_cipher_ctx_st* c) const noexcept;
  };
  struct CipherFree {
    void operator()(evp_cipher_st* c) const noexcept;
  };
  void check_sizes(ByteView in, MutableByteView out) const;

  Cipher cipher_;
  std::unique_ptr<evp_cipher_st, CipherFree> evp_cipher_;
  std::unique_ptr<evp_cipher_ctx_st, CtxFree> enc_;
  std::unique_ptr<evp_cipher_ctx_st, CtxFree> dec_;
};

}  // namespace tt::tee::detail
