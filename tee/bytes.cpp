#include "tee/bytes.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <climits>
#include <stdexcept>

#include "tee/errors.h"

namespace tt::tee {

std::string to_hex(ByteView bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return s;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::vector<std::uint8_t> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) throw std::invalid_argument("hex string has odd length");
  std::vector<std::uint8_t> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) throw std::invalid_argument("hex string has a non-hex character");
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return out;
}

bool equal_ct(ByteView a, ByteView b) noexcept {
  // Lengths are public; only the contents must not leak through timing.
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void random_bytes(MutableByteView out) {
  while (!out.empty()) {
    const std::size_t n = out.size() < std::size_t{INT_MAX} ? out.size() : std::size_t{INT_MAX};
    if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) throw_openssl_error("RAND_bytes");
    out = out.subspan(n);
  }
}

}  // namespace tt::tee
