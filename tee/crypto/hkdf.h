// HKDF-SHA256 (RFC 5869) through OpenSSL's EVP_KDF. Outputs are SecretBytes: they are keys.
#pragma once
#include <cstddef>

#include "tee/bytes.h"
#include "tee/secure_bytes.h"

namespace tt::tee {

// PRK = HMAC-SHA256(salt, ikm); 32 bytes. An empty salt means 32 zero bytes (RFC 5869 §2.2).
SecretBytes hkdf_extract(ByteView salt, ByteView ikm);
// OKM of `length` bytes (1 .. 255*32) from a pseudorandom key of at least 32 bytes.
SecretBytes hkdf_expand(ByteView prk, ByteView info, std::size_t length);
// Extract then expand.
SecretBytes hkdf(ByteView ikm, ByteView salt, ByteView info, std::size_t length);

}  // namespace tt::tee
