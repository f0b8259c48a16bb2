// Authenticated encryption (AES-256-GCM, AES-128-GCM, ChaCha20-Poly1305) through OpenSSL EVP.
//
// An Aead is built once per key and reused for every message: its two EVP_CIPHER_CTX (one for
// sealing, one for opening) get the key schedule once, and each message only sets the 12-byte
// nonce, so sealing a message allocates nothing. An Aead is not thread-safe: give each thread
// its own (they are cheap to build from the same key).
//
// Error policy: open() throws IntegrityError on a tag mismatch; try_open() returns false instead,
// for callers (the secure channel) that want to build their own error naming rank, peer and step.
// On a failed open the output buffer is zeroed, so unauthenticated plaintext is never left behind.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "tee/bytes.h"
#include "tee/crypto/stream_position.h"
#include "tee/secure_bytes.h"

namespace tt::tee {

enum class Cipher : std::uint8_t { Aes256Gcm = 1, Aes128Gcm = 2, ChaCha20Poly1305 = 3 };

// The --cipher spellings, in the order help texts list them: the one table that cipher_name, parse_cipher
// and the command line's choices (EnumNames<tee::Cipher>, engine/run_choices.h) all read.
inline constexpr std::pair<const char*, Cipher> kCipherNames[] = {
    {"aes-256-gcm", Cipher::Aes256Gcm},
    {"aes-128-gcm", Cipher::Aes128Gcm},
    {"chacha20-poly1305", Cipher::ChaCha20Poly1305}};

// "aes-256-gcm", "aes-128-gcm", "chacha20-poly1305" (kCipherNames).
std::string_view cipher_name(Cipher c);
// Parses the names above (case-insensitive); nullopt for anything else, so the caller can list them.
std::optional<Cipher> parse_cipher(std::string_view name);
// 32 for AES-256-GCM and ChaCha20-Poly1305, 16 for AES-128-GCM.
std::size_t cipher_key_size(Cipher c);
// Largest plaintext one message may carry: 2^36 - 32 bytes for GCM (SP 800-38D), 2^38 - 64 bytes
// for ChaCha20-Poly1305 (RFC 8439, 32-bit block counter starting at 1).
std::uint64_t cipher_max_message(Cipher c);

inline constexpr std::size_t kTagSize = 16;

using Tag = std::array<std::uint8_t, kTagSize>;

namespace detail {
class NonceAead;  // tee/detail/nonce.h: the nonce-taking AEAD, inside tee/ only
}

// One key's AEAD, sealing and opening messages at stream positions (tee/crypto/stream_position.h): the nonce
// is the position's, so nothing outside tee/ builds one.
class Aead {
 public:
  // `key` must be cipher_key_size(cipher) bytes; it is copied into OpenSSL's key schedule, the
  // caller keeps (and wipes) its own copy.
  Aead(Cipher cipher, ByteView key);
  ~Aead();
  Aead(Aead&&) noexcept;
  Aead& operator=(Aead&&) noexcept;
  Aead(const Aead&) = delete;
  Aead& operator=(const Aead&) = delete;

  Cipher cipher() const { return cipher_; }

  // Encrypts `plaintext` into `ciphertext` (same size; may be the same memory, not a partial
  // overlap) and writes the 16-byte tag. `aad` is authenticated, not encrypted. `at` must come from
  // the one MessageCounter of its origin under this key (stream_position.h).
  void seal(const StreamPosition& at, ByteView aad, ByteView plaintext, MutableByteView ciphertext, Tag& tag);
  // Decrypts and verifies; false (output zeroed) if the tag does not match.
  [[nodiscard]] bool try_open(const StreamPosition& at, ByteView aad, ByteView ciphertext, const Tag& tag,
                              MutableByteView plaintext);
  // As try_open, but throws IntegrityError("<context>: authentication failed ...") on mismatch.
  void open(const StreamPosition& at, ByteView aad, ByteView ciphertext, const Tag& tag,
            MutableByteView plaintext, std::string_view context = "AEAD message");

  // Wire helpers: the sealed message is ciphertext || tag (size plaintext.size() + kTagSize).
  void seal_append_tag(const StreamPosition& at, ByteView aad, ByteView plaintext, MutableByteView sealed);
  [[nodiscard]] bool try_open_with_tag(const StreamPosition& at, ByteView aad, ByteView sealed,
                                       MutableByteView plaintext);

 private:
  Cipher cipher_;
  std::unique_ptr<detail::NonceAead> core_;
};

// A sealing stream (one key, one origin): every seal() takes the next position of its own counter,
// so a message can neither pick its nonce nor repeat one. The other end reads it with an OpeningStream
// of the same key and origin, which expects the messages in the same order.
class SealingStream {
 public:
  SealingStream(Cipher cipher, ByteView key, std::uint32_t origin) : aead_(cipher, key), counter_(origin) {}
  // The counter the next message gets (for associated data that names it).
  std::uint64_t next_counter() const { return counter_.next_counter(); }
  // Seals the next message: sealed = ciphertext || tag (plaintext.size() + kTagSize bytes).
  void seal(ByteView aad, ByteView plaintext, MutableByteView sealed) {
    aead_.seal_append_tag(counter_.next(), aad, plaintext, sealed);
  }

 private:
  Aead aead_;
  MessageCounter counter_;
};

class OpeningStream {
 public:
  OpeningStream(Cipher cipher, ByteView key, std::uint32_t origin) : aead_(cipher, key), counter_(origin) {}
  // The counter the next message must have been sealed at.
  std::uint64_t next_counter() const { return counter_.next_counter(); }
  // Opens the next message (ciphertext || tag) at the position this end expects; false (output
  // zeroed) if it does not verify. The position is spent either way: a failed message is not retried.
  [[nodiscard]] bool try_open(ByteView aad, ByteView sealed, MutableByteView plaintext) {
    return aead_.try_open_with_tag(counter_.next(), aad, sealed, plaintext);
  }

 private:
  Aead aead_;
  MessageCounter counter_;
};

}  // namespace tt::tee
