// SecretBytes: the only type tee/ uses to hold key material.
//
// - Owns one heap buffer, allocated with OPENSSL_secure_zalloc: if the program has set up OpenSSL's
//   secure heap (CRYPTO_secure_malloc_init), keys live in locked, never-swapped pages; otherwise it
//   is an ordinary allocation.
// - Wiped (OPENSSL_cleanse, which the optimiser may not elide) before the memory is released: on
//   destruction, on assignment over an existing key, and on clear().
// - Move transfers the buffer itself, so no copy of the key is left behind in the moved-from object,
//   which becomes empty. Copies must be explicit (clone()), so a key is never duplicated by accident.
// - Never printable: there is no operator<< and no to-string. fingerprint() is safe to print.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "tee/bytes.h"

namespace tt::tee {

namespace detail {
// Deleter of SecretBytes' buffer: cleanse `size` bytes, then free. (A namespace-level type so that
// unique_ptr sees it as default-constructible.)
struct CleanseFree {
  std::size_t size = 0;
  void operator()(std::uint8_t* p) const noexcept;
};
}  // namespace detail

class SecretBytes {
 public:
  SecretBytes() = default;
  // `size` zero bytes (fill with random_bytes or a KDF through data()).
  explicit SecretBytes(std::size_t size);
  // A copy of `bytes`; the caller remains responsible for wiping its own copy.
  explicit SecretBytes(ByteView bytes);
  // A fresh random key of `size` bytes from OpenSSL's CSPRNG.
  static SecretBytes random(std::size_t size);

  SecretBytes(SecretBytes&& other) noexcept
      : buf_(std::move(other.buf_)), size_(std::exchange(other.size_, 0)) {}
  SecretBytes& operator=(SecretBytes&& other) noexcept {
    if (this != &other) {
      clear();  // wipe our old key before taking the new one
      buf_ = std::move(other.buf_);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  ~SecretBytes() { clear(); }

  SecretBytes clone() const { return SecretBytes(view()); }

  std::uint8_t* data() { return buf_.get(); }
  const std::uint8_t* data() const { return buf_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  ByteView view() const { return {buf_.get(), size_}; }
  MutableByteView mutable_view() { return {buf_.get(), size_}; }

  // Overwrites the bytes with zeros, keeping the size (the buffer can be refilled).
  void wipe() noexcept;
  // Wipes and releases the buffer; the object becomes empty.
  void clear() noexcept;

  // First 8 bytes of SHA-256("teetrain key fingerprint v1" || key), as 16 hex characters. The
  // domain prefix keeps the fingerprint distinct from any other hash of the key. Safe to print and
  // to store in clear headers: it identifies a key, it does not reveal it.
  std::string fingerprint() const;

  // Constant-time comparison.
  friend bool operator==(const SecretBytes& a, const SecretBytes& b) noexcept {
    return equal_ct(a.view(), b.view());
  }

 private:
  std::unique_ptr<std::uint8_t[], detail::CleanseFree> buf_;
  std::size_t size_ = 0;
};

// The raw 8-byte fingerprint of `key` (see SecretBytes::fingerprint), as stored in sealed headers.
std::array<std::uint8_t, 8> key_fingerprint(ByteView key);

}  // namespace tt::tee
