#include "tee/crypto/hkdf.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <array>
#include <memory>
#include <stdexcept>

#include "tee/errors.h"
#include "tee/openssl_ptr.h"

namespace tt::tee {
namespace {

constexpr std::size_t kHashLen = 32;

// One HKDF derivation in the given mode. HKDF runs per file and per rekey, not per message, so the
// fetch and context allocation here are not on a hot path.
SecretBytes run_hkdf(int mode, ByteView key, ByteView salt, ByteView info, std::size_t length) {
  if (length == 0 || length > 255 * kHashLen)
    throw std::invalid_argument("HKDF output length must be 1 .. 8160 bytes");
  std::unique_ptr<EVP_KDF, decltype(&EVP_KDF_free)> kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr),
                                                        &EVP_KDF_free);
  if (!kdf) throw_openssl_error("EVP_KDF_fetch(HKDF)");
  CPtr<EVP_KDF_CTX, EVP_KDF_CTX_free> ctx(EVP_KDF_CTX_new(kdf.get()));
  if (!ctx) throw_openssl_error("EVP_KDF_CTX_new");

  // OSSL_PARAM wants non-const pointers even for inputs it only reads; these buffers are not written.
  static constexpr char kDigest[] = "SHA256";
  std::array<OSSL_PARAM, 6> params{};
  std::size_t n = 0;
  params[n++] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
  params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(kDigest), 0);
  // A zero-length octet string still needs a valid pointer; OpenSSL treats it as "empty".
  static constexpr std::uint8_t kEmpty = 0;
  auto octets = [](const char* name, ByteView v) {
    return OSSL_PARAM_construct_octet_string(name, const_cast<std::uint8_t*>(v.empty() ? &kEmpty : v.data()),
                                             v.size());
  };
  params[n++] = octets(OSSL_KDF_PARAM_KEY, key);
  if (mode != EVP_KDF_HKDF_MODE_EXPAND_ONLY) params[n++] = octets(OSSL_KDF_PARAM_SALT, salt);
  if (mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY) params[n++] = octets(OSSL_KDF_PARAM_INFO, info);
  params[n] = OSSL_PARAM_construct_end();

  SecretBytes out(length);
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params.data()) != 1)
    throw_openssl_error("HKDF-SHA256");
  return out;
}

}  // namespace

SecretBytes hkdf_extract(ByteView salt, ByteView ikm) {
  return run_hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, ikm, salt, {}, kHashLen);
}

SecretBytes hkdf_expand(ByteView prk, ByteView info, std::size_t length) {
  if (prk.size() < kHashLen) throw std::invalid_argument("HKDF-Expand: PRK shorter than 32 bytes");
  return run_hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, prk, {}, info, length);
}

SecretBytes hkdf(ByteView ikm, ByteView salt, ByteView info, std::size_t length) {
  return run_hkdf(EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, ikm, salt, info, length);
}

}  // namespace tt::tee
