// X25519 key agreement and Ed25519 signatures: RAII over EVP_PKEY.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "tee/bytes.h"
#include "tee/secure_bytes.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace tt::tee {

using PublicKey = std::array<std::uint8_t, 32>;  // raw X25519 or Ed25519 public key
using Signature = std::array<std::uint8_t, 64>;  // raw Ed25519 signature

struct PkeyFree {
  void operator()(evp_pkey_st* k) const noexcept;
};
using PkeyPtr = std::unique_ptr<evp_pkey_st, PkeyFree>;

// An ephemeral X25519 key pair for one handshake.
class X25519KeyPair {
 public:
  static X25519KeyPair generate();
  // From a raw 32-byte private key (RFC 7748 test vectors; not for production use).
  static X25519KeyPair from_private(ByteView private_key);

  PublicKey public_key() const;
  // The raw 32-byte shared secret with `peer`. Feed it to HKDF, never use it as a key directly.
  // Throws IntegrityError if the peer's key is a low-order point (the result would be all zero:
  // a peer trying to force a known secret).
  SecretBytes shared_secret(const PublicKey& peer) const;

 private:
  explicit X25519KeyPair(PkeyPtr k) : key_(std::move(k)) {}
  PkeyPtr key_;
};

// A long-lived Ed25519 device key (the per-rank "device identity" of emulated attestation).
class Ed25519KeyPair {
 public:
  static Ed25519KeyPair generate();
  static Ed25519KeyPair from_private(ByteView private_key);  // raw 32-byte seed
  // Loads a PKCS#8 PEM private key (as written by save_pem or `openssl genpkey -algorithm ed25519`).
  // Throws InputError naming the path if it is missing, unreadable or not Ed25519.
  static Ed25519KeyPair load_pem(const std::filesystem::path& path);
  // Writes the private key as unencrypted PKCS#8 PEM, readable by the owner only (mode 0600),
  // created fresh: an existing file is replaced atomically (temporary file + rename).
  void save_pem(const std::filesystem::path& path) const;

  PublicKey public_key() const;
  Signature sign(ByteView message) const;
  // The OpenSSL key, for X.509 signing (tee/identity/vendor.cpp) and certificate checks
  // (tee/identity/x509.cpp).
  evp_pkey_st* native() const { return key_.get(); }

 private:
  explicit Ed25519KeyPair(PkeyPtr k) : key_(std::move(k)) {}
  PkeyPtr key_;
};

// True iff `signature` is a valid Ed25519 signature of `message` under `public_key`.
bool ed25519_verify(const PublicKey& public_key, ByteView message, const Signature& signature);

}  // namespace tt::tee
