// Byte-span vocabulary for tee/: every API takes std::span<const std::uint8_t> (OpenSSL's unsigned
// char), plus helpers to view other trivially copyable buffers (float gradients, strings) as bytes,
// fixed-width big-endian encoding for wire formats, and hex for printing non-secret values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tt::tee {

using ByteView = std::span<const std::uint8_t>;
using MutableByteView = std::span<std::uint8_t>;

// Views a span of trivially copyable values (e.g. a float gradient chunk) as its bytes.
template <typename T>
requires std::is_trivially_copyable_v<T> ByteView bytes_of(std::span<T> s) {
  // Reinterpreting as unsigned char is the one aliasing the standard always allows.
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size_bytes()};
}
template <typename T>
requires(std::is_trivially_copyable_v<T> && !std::is_const_v<T>) MutableByteView
    writable_bytes_of(std::span<T> s) {
  return {reinterpret_cast<std::uint8_t*>(s.data()), s.size_bytes()};
}
inline ByteView bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Big-endian fixed-width encoding: network order keeps nonces and AAD readable in a hex dump.
inline void store_be32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
inline void store_be64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
inline std::uint32_t load_be32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}
inline std::uint64_t load_be64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
// Little-endian value of up to 8 bytes: the formats others define (llm.c token shards, safetensors,
// SPDM, TDX and SEV-SNP evidence) are little-endian, whatever the host is.
inline std::uint64_t load_le(ByteView b) {
  std::uint64_t v = 0;
  for (std::size_t i = b.size(); i-- > 0;) v = (v << 8) | b[i];
  return v;
}

// Lower-case hex of non-secret bytes (digests, public keys, fingerprints, ciphertext).
std::string to_hex(ByteView bytes);
// Parses hex (upper or lower case, even length); throws std::invalid_argument otherwise.
std::vector<std::uint8_t> from_hex(std::string_view hex);

// Constant-time equality (CRYPTO_memcmp) for comparing digests and keys an adversary may probe.
bool equal_ct(ByteView a, ByteView b) noexcept;

// Fills `out` from OpenSSL's CSPRNG; throws CryptoError if it is not seeded.
void random_bytes(MutableByteView out);
template <std::size_t N>
std::array<std::uint8_t, N> random_array() {
  std::array<std::uint8_t, N> a{};
  random_bytes(a);
  return a;
}

}  // namespace tt::tee
