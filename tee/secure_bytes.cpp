#include "tee/secure_bytes.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "tee/digest.h"
#include "tee/errors.h"

namespace tt::tee {

void detail::CleanseFree::operator()(std::uint8_t* p) const noexcept {
  // Cleanses `size` bytes, then frees (secure heap or ordinary heap, whichever it came from).
  OPENSSL_secure_clear_free(p, size);
}

SecretBytes::SecretBytes(std::size_t size) : size_(size) {
  if (size == 0) return;
  void* p = OPENSSL_secure_zalloc(size);
  if (p == nullptr) throw CryptoError("SecretBytes: out of memory allocating a key buffer");
  buf_ = std::unique_ptr<std::uint8_t[], detail::CleanseFree>(static_cast<std::uint8_t*>(p),
                                                              detail::CleanseFree{size});
}

SecretBytes::SecretBytes(ByteView bytes) : SecretBytes(bytes.size()) {
  std::copy(bytes.begin(), bytes.end(), buf_.get());
}

SecretBytes SecretBytes::random(std::size_t size) {
  SecretBytes s(size);
  random_bytes(s.mutable_view());
  return s;
}

void SecretBytes::wipe() noexcept {
  if (buf_) OPENSSL_cleanse(buf_.get(), size_);
}

void SecretBytes::clear() noexcept {
  buf_.reset();  // CleanseFree cleanses before freeing
  size_ = 0;
}

std::array<std::uint8_t, 8> key_fingerprint(ByteView key) {
  Sha256 h;
  h.update(std::string_view("teetrain key fingerprint v1"));
  h.update(key);
  const Sha256Digest d = h.finish();
  std::array<std::uint8_t, 8> fp{};
  std::copy_n(d.begin(), fp.size(), fp.begin());
  return fp;
}

std::string SecretBytes::fingerprint() const {
  return to_hex(key_fingerprint(view()));
}

}  // namespace tt::tee
