#include "tee/crypto/aead.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "tee/detail/nonce.h"
#include "tee/errors.h"

namespace tt::tee {

std::string_view cipher_name(Cipher c) {
  for (const auto& [name, cipher] : kCipherNames)
    if (cipher == c) return name;
  return "unknown";
}

std::optional<Cipher> parse_cipher(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const auto& [n, c] : kCipherNames)
    if (lower == n) return c;
  return std::nullopt;
}

std::size_t cipher_key_size(Cipher c) {
  return c == Cipher::Aes128Gcm ? 16 : 32;
}

std::uint64_t cipher_max_message(Cipher c) {
  return c == Cipher::ChaCha20Poly1305 ? (std::uint64_t{1} << 38) - 64 : (std::uint64_t{1} << 36) - 32;
}

namespace {

// OpenSSL's update functions take int lengths; feed larger messages in 1 GiB pieces.
constexpr std::size_t kMaxUpdate = std::size_t{1} << 30;

const char* openssl_cipher_name(Cipher c) {
  switch (c) {
    case Cipher::Aes256Gcm:
      return "AES-256-GCM";
    case Cipher::Aes128Gcm:
      return "AES-128-GCM";
    case Cipher::ChaCha20Poly1305:
      return "ChaCha20-Poly1305";
  }
  throw std::invalid_argument("unknown cipher");
}

using UpdateFn = int (*)(EVP_CIPHER_CTX*, unsigned char*, int*, const unsigned char*, int);

// AAD pass: out == nullptr tells EVP the bytes are associated data.
void feed_aad(EVP_CIPHER_CTX* ctx, UpdateFn update, ByteView aad) {
  for (std::size_t off = 0; off < aad.size(); off += kMaxUpdate) {
    const int n = static_cast<int>(std::min(kMaxUpdate, aad.size() - off));
    int outl = 0;
    if (update(ctx, nullptr, &outl, aad.data() + off, n) != 1) throw_openssl_error("AEAD associated data");
  }
}

// Data pass. GCM and ChaCha20-Poly1305 are stream modes: every update emits exactly its input.
void feed_data(EVP_CIPHER_CTX* ctx, UpdateFn update, ByteView in, std::uint8_t* out) {
  for (std::size_t off = 0; off < in.size(); off += kMaxUpdate) {
    const int n = static_cast<int>(std::min(kMaxUpdate, in.size() - off));
    int outl = 0;
    if (update(ctx, out + off, &outl, in.data() + off, n) != 1 || outl != n)
      throw_openssl_error("AEAD update");
  }
}

}  // namespace

namespace detail {

void NonceAead::CtxFree::operator()(evp_cipher_ctx_st* c) const noexcept {
  EVP_CIPHER_CTX_free(c);
}
void NonceAead::CipherFree::operator()(evp_cipher_st* c) const noexcept {
  EVP_CIPHER_free(c);
}

NonceAead::NonceAead(Cipher cipher, ByteView key)
    : cipher_(cipher),
      // An explicit fetch, held for the Aead's life, so no init ever does an implicit lookup.
      evp_cipher_(EVP_CIPHER_fetch(nullptr, openssl_cipher_name(cipher), nullptr)),
      enc_(EVP_CIPHER_CTX_new()),
      dec_(EVP_CIPHER_CTX_new()) {
  if (key.size() != cipher_key_size(cipher))
    throw std::invalid_argument(std::string(cipher_name(cipher)) + " needs a " +
                                std::to_string(cipher_key_size(cipher)) + "-byte key, got " +
                                std::to_string(key.size()));
  if (!evp_cipher_) throw_openssl_error(std::string("fetching ") + openssl_cipher_name(cipher));
  if (!enc_ || !dec_) throw_openssl_error("EVP_CIPHER_CTX_new");
  // The key schedule is computed here, once; per message only the nonce is set (see seal/open).
  if (EVP_EncryptInit_ex(enc_.get(), evp_cipher_.get(), nullptr, key.data(), nullptr) != 1)
    throw_openssl_error("AEAD encrypt key setup");
  if (EVP_DecryptInit_ex(dec_.get(), evp_cipher_.get(), nullptr, key.data(), nullptr) != 1)
    throw_openssl_error("AEAD decrypt key setup");
  // 12 bytes is the default for all three ciphers; check rather than assume.
  if (EVP_CIPHER_CTX_get_iv_length(enc_.get()) != static_cast<int>(kNonceSize))
    throw CryptoError("AEAD: unexpected nonce length");
}

NonceAead::~NonceAead() = default;
NonceAead::NonceAead(NonceAead&&) noexcept = default;
NonceAead& NonceAead::operator=(NonceAead&&) noexcept = default;

void NonceAead::check_sizes(ByteView in, MutableByteView out) const {
  if (!enc_) throw std::logic_error("Aead used after being moved from");
  if (in.size() != out.size()) throw std::invalid_argument("AEAD: input and output sizes differ");
  if (in.size() > cipher_max_message(cipher_))
    throw std::length_error("AEAD: message longer than " + std::string(cipher_name(cipher_)) + " allows");
  // In place (same start) is supported by EVP; a shifted overlap would corrupt the stream.
  const auto* a = in.data();
  const auto* b = out.data();
  if (!in.empty() && a != b && std::less<>{}(a, b + out.size()) && std::less<>{}(b, a + in.size()))
    throw std::invalid_argument("AEAD: input and output partially overlap");
}

void NonceAead::seal(const Nonce& nonce, ByteView aad, ByteView plaintext, MutableByteView ciphertext,
                     Tag& tag) {
  check_sizes(plaintext, ciphertext);
  EVP_CIPHER_CTX* ctx = enc_.get();
  if (EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, nonce.bytes.data()) != 1)
    throw_openssl_error("AEAD seal: setting nonce");
  feed_aad(ctx, &EVP_EncryptUpdate, aad);
  feed_data(ctx, &EVP_EncryptUpdate, plaintext, ciphertext.data());
  std::uint8_t tail = 0;  // stream modes emit nothing at final; EVP still wants a buffer
  int outl = 0;
  if (EVP_EncryptFinal_ex(ctx, &tail, &outl) != 1 || outl != 0) throw_openssl_error("AEAD seal: final");
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagSize), tag.data()) != 1)
    throw_openssl_error("AEAD seal: reading tag");
}

bool NonceAead::try_open(const Nonce& nonce, ByteView aad, ByteView ciphertext, const Tag& tag,
                         MutableByteView plaintext) {
  check_sizes(ciphertext, plaintext);
  EVP_CIPHER_CTX* ctx = dec_.get();
  if (EVP_DecryptInit_ex(ctx, nullptr, nullptr, nullptr, nonce.bytes.data()) != 1)
    throw_openssl_error("AEAD open: setting nonce");
  Tag expected = tag;  // EVP's ctrl takes a non-const pointer
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagSize), expected.data()) != 1)
    throw_openssl_error("AEAD open: setting tag");
  feed_aad(ctx, &EVP_DecryptUpdate, aad);
  feed_data(ctx, &EVP_DecryptUpdate, ciphertext, plaintext.data());
  std::uint8_t tail = 0;
  int outl = 0;
  if (EVP_DecryptFinal_ex(ctx, &tail, &outl) == 1) return true;
  // Tag mismatch: the plaintext already written is unauthenticated; never let a caller use it.
  clear_openssl_errors();
  if (!plaintext.empty()) OPENSSL_cleanse(plaintext.data(), plaintext.size());
  return false;
}

void NonceAead::open(const Nonce& nonce, ByteView aad, ByteView ciphertext, const Tag& tag,
                     MutableByteView plaintext, std::string_view context) {
  if (!try_open(nonce, aad, ciphertext, tag, plaintext))
    throw IntegrityError(std::string(context) +
                         ": authentication failed (tampered, replayed, reordered, truncated or wrong key)");
}

void NonceAead::seal_append_tag(const Nonce& nonce, ByteView aad, ByteView plaintext,
                                MutableByteView sealed) {
  if (sealed.size() != plaintext.size() + kTagSize)
    throw std::invalid_argument("AEAD seal_append_tag: output must be plaintext size + 16");
  Tag tag{};
  seal(nonce, aad, plaintext, sealed.first(plaintext.size()), tag);
  std::copy(tag.begin(), tag.end(), sealed.begin() + static_cast<std::ptrdiff_t>(plaintext.size()));
}

bool NonceAead::try_open_with_tag(const Nonce& nonce, ByteView aad, ByteView sealed,
                                  MutableByteView plaintext) {
  if (sealed.size() < kTagSize || plaintext.size() != sealed.size() - kTagSize) return false;
  Tag tag{};
  std::copy(sealed.end() - static_cast<std::ptrdiff_t>(kTagSize), sealed.end(), tag.begin());
  return try_open(nonce, aad, sealed.first(plaintext.size()), tag, plaintext);
}

}  // namespace detail

Aead::Aead(Cipher cipher, ByteView key)
    : cipher_(cipher), core_(std::make_unique<detail::NonceAead>(cipher, key)) {}
Aead::~Aead() = default;
Aead::Aead(Aead&&) noexcept = default;
Aead& Aead::operator=(Aead&&) noexcept = default;

namespace {
detail::NonceAead& core_of(const std::unique_ptr<detail::NonceAead>& core) {
  if (!core) throw std::logic_error("Aead used after being moved from");
  return *core;
}
}  // namespace

void Aead::seal(const StreamPosition& at, ByteView aad, ByteView plaintext, MutableByteView ciphertext,
                Tag& tag) {
  core_of(core_).seal(detail::nonce_at(at), aad, plaintext, ciphertext, tag);
}

bool Aead::try_open(const StreamPosition& at, ByteView aad, ByteView ciphertext, const Tag& tag,
                    MutableByteView plaintext) {
  return core_of(core_).try_open(detail::nonce_at(at), aad, ciphertext, tag, plaintext);
}

void Aead::open(const StreamPosition& at, ByteView aad, ByteView ciphertext, const Tag& tag,
                MutableByteView plaintext, std::string_view context) {
  core_of(core_).open(detail::nonce_at(at), aad, ciphertext, tag, plaintext, context);
}

void Aead::seal_append_tag(const StreamPosition& at, ByteView aad, ByteView plaintext,
                           MutableByteView sealed) {
  core_of(core_).seal_append_tag(detail::nonce_at(at), aad, plaintext, sealed);
}

bool Aead::try_open_with_tag(const StreamPosition& at, ByteView aad, ByteView sealed,
                             MutableByteView plaintext) {
  return core_of(core_).try_open_with_tag(detail::nonce_at(at), aad, sealed, plaintext);
}

}  // namespace tt::tee
