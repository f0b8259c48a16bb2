#include "tee/digest.h"

#include <openssl/evp.h>

#include "tee/errors.h"

namespace tt::tee {

Sha256Digest sha256(ByteView data) {
  Sha256Digest d{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &len, EVP_sha256(), nullptr) != 1 || len != d.size())
    throw_openssl_error("SHA-256");
  return d;
}

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const noexcept {
  EVP_MD_CTX_free(ctx);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw_openssl_error("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw_openssl_error("SHA-256 init");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(ByteView data) {
  if (!ctx_) throw CryptoError("Sha256::update after finish() or move");
  if (!data.empty() && EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1)
    throw_openssl_error("SHA-256 update");
  return *this;
}

Sha256Digest Sha256::finish() {
  if (!ctx_) throw CryptoError("Sha256::finish called twice or after move");
  Sha256Digest d{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), d.data(), &len) != 1 || len != d.size())
    throw_openssl_error("SHA-256 final");
  ctx_.reset();
  return d;
}

Sha256Digest hmac_sha256(ByteView key, ByteView data) {
  Sha256Digest d{};
  std::size_t len = 0;
  // EVP_Q_mac is the non-deprecated one-shot HMAC of OpenSSL 3 (HMAC_CTX is deprecated).
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(), data.data(), data.size(),
                d.data(), d.size(), &len) == nullptr ||
      len != d.size())
    throw_openssl_error("HMAC-SHA256");
  return d;
}

}  // namespace tt::tee
