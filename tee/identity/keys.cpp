#include "tee/identity/keys.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tee/errors.h"
#include "tee/openssl_ptr.h"
#include "tee/regular_file.h"
#include "tee/secure_bytes.h"
#include "tee/unique_fd.h"

namespace tt::tee {

void PkeyFree::operator()(evp_pkey_st* k) const noexcept {
  EVP_PKEY_free(k);
}

namespace {

PkeyPtr generate_key(const char* type) {
  PkeyPtr k(EVP_PKEY_Q_keygen(nullptr, nullptr, type));
  if (!k) throw_openssl_error(std::string(type) + " key generation");
  return k;
}

PkeyPtr private_from_raw(int type, ByteView raw, const char* what) {
  if (raw.size() != 32) throw std::invalid_argument(std::string(what) + " private key must be 32 bytes");
  PkeyPtr k(EVP_PKEY_new_raw_private_key(type, nullptr, raw.data(), raw.size()));
  if (!k) throw_openssl_error(std::string(what) + " private key import");
  return k;
}

PublicKey raw_public(const evp_pkey_st* k, const char* what) {
  PublicKey pub{};
  std::size_t len = pub.size();
  if (EVP_PKEY_get_raw_public_key(k, pub.data(), &len) != 1 || len != pub.size())
    throw_openssl_error(std::string(what) + " public key export");
  return pub;
}

}  // namespace

// ---- X25519 ----

X25519KeyPair X25519KeyPair::generate() {
  return X25519KeyPair(generate_key("X25519"));
}

X25519KeyPair X25519KeyPair::from_private(ByteView private_key) {
  return X25519KeyPair(private_from_raw(EVP_PKEY_X25519, private_key, "X25519"));
}

PublicKey X25519KeyPair::public_key() const {
  return raw_public(key_.get(), "X25519");
}

SecretBytes X25519KeyPair::shared_secret(const PublicKey& peer) const {
  PkeyPtr peer_key(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer.data(), peer.size()));
  if (!peer_key) throw_openssl_error("X25519 peer public key import");
  CPtr<EVP_PKEY_CTX, EVP_PKEY_CTX_free> ctx(EVP_PKEY_CTX_new(key_.get(), nullptr));
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1) throw_openssl_error("X25519 derive init");
  if (EVP_PKEY_derive_set_peer(ctx.get(), peer_key.get()) != 1) throw_openssl_error("X25519 set peer");
  SecretBytes secret(32);
  std::size_t len = secret.size();
  if (EVP_PKEY_derive(ctx.get(), secret.data(), &len) != 1 || len != secret.size()) {
    // OpenSSL refuses exactly when the result is all zero, i.e. the peer sent a low-order point.
    clear_openssl_errors();
    throw IntegrityError("X25519 key agreement failed: peer public key is a low-order point");
  }
  return secret;
}

// ---- Ed25519 ----

Ed25519KeyPair Ed25519KeyPair::generate() {
  return Ed25519KeyPair(generate_key("ED25519"));
}

Ed25519KeyPair Ed25519KeyPair::from_private(ByteView private_key) {
  return Ed25519KeyPair(private_from_raw(EVP_PKEY_ED25519, private_key, "Ed25519"));
}

Ed25519KeyPair Ed25519KeyPair::load_pem(const std::filesystem::path& path) {
  // Read through the one reader of user-given files (a FIFO is refused, not waited on), straight into
  // wiped memory: the PEM holds the private key.
  const RegularFile f = open_regular_file(path, "device key");
  if (f.size > kMaxPemFileBytes)
    throw InputError("device key '" + path.string() + "': " + std::to_string(f.size) +
                     " bytes, not a PEM key");
  SecretBytes pem(static_cast<std::size_t>(f.size));
  if (pread_full(f.fd.get(), pem.mutable_view(), 0) != static_cast<long long>(pem.size()))
    throw InputError("device key '" + path.string() + "': changed size while being read");
  CPtr<BIO, BIO_free_all> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) {
    clear_openssl_errors();
    throw CryptoError("device key '" + path.string() + "': cannot buffer the file");
  }
  PkeyPtr k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!k) {
    clear_openssl_errors();
    throw InputError("device key '" + path.string() + "': not a PEM private key");
  }
  if (EVP_PKEY_get_id(k.get()) != EVP_PKEY_ED25519)
    throw InputError("device key '" + path.string() + "': not an Ed25519 key");
  return Ed25519KeyPair(std::move(k));
}

void Ed25519KeyPair::save_pem(const std::filesystem::path& path) const {
  CPtr<BIO, BIO_free_all> mem(BIO_new(BIO_s_secmem()));
  if (!mem || PEM_write_bio_PrivateKey(mem.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    throw_openssl_error("Ed25519 PEM encoding");
  char* pem = nullptr;
  const long len = BIO_get_mem_data(mem.get(), &pem);

  // Owner-only from the first byte, replaced whole: never readable by others, never half a key.
  write_file_atomic(path, ByteView(reinterpret_cast<const std::uint8_t*>(pem), static_cast<std::size_t>(len)),
                    0600, "device key");
}

PublicKey Ed25519KeyPair::public_key() const {
  return raw_public(key_.get(), "Ed25519");
}

Signature Ed25519KeyPair::sign(ByteView message) const {
  CPtr<EVP_MD_CTX, EVP_MD_CTX_free> ctx(EVP_MD_CTX_new());
  // Ed25519 is "pure": no separate digest, the whole message goes into one DigestSign call.
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1)
    throw_openssl_error("Ed25519 sign init");
  Signature sig{};
  std::size_t len = sig.size();
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, message.data(), message.size()) != 1 || len != sig.size())
    throw_openssl_error("Ed25519 sign");
  return sig;
}

bool ed25519_verify(const PublicKey& public_key, ByteView message, const Signature& signature) {
  PkeyPtr k(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, public_key.data(), public_key.size()));
  if (!k) {
    clear_openssl_errors();  // not a valid curve point: a bad key, so a bad signature
    return false;
  }
  CPtr<EVP_MD_CTX, EVP_MD_CTX_free> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, k.get()) != 1)
    throw_openssl_error("Ed25519 verify init");
  const int rc =
      EVP_DigestVerify(ctx.get(), signature.data(), signature.size(), message.data(), message.size());
  clear_openssl_errors();
  return rc == 1;
}

}  // namespace tt::tee
