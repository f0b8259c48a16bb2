// ECDSA verification over raw r || s signatures, as SPDM (P-384) and Intel's quotes (P-256) carry them,
// by a certificate's key or by a raw public key (Intel's attestation key: x || y).
#pragma once
#include <memory>

#include "tee/bytes.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace tt::tee::evidence {

enum class Curve { P256, P384 };  // each with its hash: SHA-256, SHA-384

struct PkeyFree {
  void operator()(evp_pkey_st* k) const noexcept;
};
using PkeyPtr = std::unique_ptr<evp_pkey_st, PkeyFree>;

// Whether `key` is an EC key on `curve`.
bool is_on_curve(const evp_pkey_st* key, Curve curve);
// A P-256 public key from its raw affine coordinates x || y (64 bytes); null if not a point on the curve.
PkeyPtr p256_public_key(ByteView xy);
// ECDSA over the curve's hash of `data` by `key`; false for a wrong signature, another curve or key
// type, or a signature that is not 2 * the curve's scalar size.
bool verify_ecdsa_raw(evp_pkey_st* key, Curve curve, ByteView data, ByteView r_s);

}  // namespace tt::tee::evidence
