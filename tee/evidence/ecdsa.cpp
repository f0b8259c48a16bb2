#include "tee/evidence/ecdsa.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>

#include <array>
#include <vector>

#include "tee/errors.h"
#include "tee/openssl_ptr.h"

namespace tt::tee::evidence {
namespace {

std::size_t scalar_bytes(Curve c) {
  return c == Curve::P256 ? 32 : 48;
}

// r || s as the DER ECDSA-Sig-Value that EVP_DigestVerify takes.
std::vector<std::uint8_t> der_signature(ByteView raw) {
  const int half = static_cast<int>(raw.size() / 2);
  CPtr<BIGNUM, BN_free> r(BN_bin2bn(raw.data(), half, nullptr));
  CPtr<BIGNUM, BN_free> s(BN_bin2bn(raw.data() + half, half, nullptr));
  CPtr<ECDSA_SIG, ECDSA_SIG_free> sig(ECDSA_SIG_new());
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1)
    throw_openssl_error("ECDSA signature");
  (void)r.release();  // ECDSA_SIG_set0 took both
  (void)s.release();
  unsigned char* out = nullptr;
  const int len = i2d_ECDSA_SIG(sig.get(), &out);
  if (len <= 0) throw_openssl_error("ECDSA signature encoding");
  std::vector<std::uint8_t> der(out, out + len);
  OPENSSL_free(out);
  return der;
}

}  // namespace

void PkeyFree::operator()(evp_pkey_st* k) const noexcept {
  EVP_PKEY_free(k);
}

bool is_on_curve(const evp_pkey_st* key, Curve curve) {
  if (key == nullptr || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return false;
  std::array<char, 64> group{};
  std::size_t len = 0;
  const bool named = EVP_PKEY_get_group_name(key, group.data(), group.size(), &len) == 1;
  return named && OBJ_txt2nid(group.data()) == (curve == Curve::P256 ? NID_X9_62_prime256v1 : NID_secp384r1);
}

PkeyPtr p256_public_key(ByteView xy) {
  if (xy.size() != 64) return nullptr;
  std::vector<std::uint8_t> point{0x04};  // uncompressed SEC 1 point
  point.insert(point.end(), xy.begin(), xy.end());
  CPtr<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free> bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
    throw_openssl_error("P-256 key parameters");
  CPtr<OSSL_PARAM, OSSL_PARAM_free> params(OSSL_PARAM_BLD_to_param(bld.get()));
  CPtr<EVP_PKEY_CTX, EVP_PKEY_CTX_free> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) throw_openssl_error("P-256 key setup");
  const bool ok = EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) == 1;
  PkeyPtr out(key);
  clear_openssl_errors();
  return ok ? std::move(out) : nullptr;  // not a point on the curve: no key
}

bool verify_ecdsa_raw(evp_pkey_st* key, Curve curve, ByteView data, ByteView r_s) {
  if (r_s.size() != 2 * scalar_bytes(curve) || !is_on_curve(key, curve)) {
    clear_openssl_errors();
    return false;
  }
  const std::vector<std::uint8_t> der = der_signature(r_s);
  CPtr<EVP_MD_CTX, EVP_MD_CTX_free> ctx(EVP_MD_CTX_new());
  const EVP_MD* md = curve == Curve::P256 ? EVP_sha256() : EVP_sha384();
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) != 1)
    throw_openssl_error("ECDSA verify setup");
  const int rc = EVP_DigestVerify(ctx.get(), der.data(), der.size(), data.data(), data.size());
  clear_openssl_errors();
  return rc == 1;
}

}  // namespace tt::tee::evidence
