// SHA-256 (one-shot and incremental) and HMAC-SHA256, through OpenSSL EVP.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tee/bytes.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of our headers

namespace tt::tee {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(ByteView data);
inline Sha256Digest sha256(std::string_view data) {
  return sha256(bytes_of(data));
}

// Incremental SHA-256 for inputs that arrive in pieces (a binary read in blocks, a header built
// field by field). finish() may be called once; the object is then spent.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(ByteView data);
  Sha256& update(std::string_view data) { return update(bytes_of(data)); }
  Sha256Digest finish();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

Sha256Digest hmac_sha256(ByteView key, ByteView data);

}  // namespace tt::tee
