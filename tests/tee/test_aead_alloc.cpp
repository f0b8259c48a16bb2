// Proves the "no allocation per message" property of Aead: OpenSSL's allocator is replaced by a
// counting one (possible only before OpenSSL's first allocation, hence this separate binary), and
// sealing/opening many messages after construction must not allocate at all.
#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cstdlib>

#include "tee/crypto/aead.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

std::atomic<long>& allocations() {
  static std::atomic<long> n{0};  // a C callback has no user pointer; a function-local static is the only way
  return n;
}
void* counting_malloc(std::size_t n, const char*, int) {
  allocations()++;
  return std::malloc(n);
}
void* counting_realloc(void* p, std::size_t n, const char*, int) {
  allocations()++;
  return std::realloc(p, n);
}
void counting_free(void* p, const char*, int) {
  std::free(p);
}

TEST(AeadAllocation, NoAllocationPerMessage) {
  if (CRYPTO_set_mem_functions(&counting_malloc, &counting_realloc, &counting_free) != 1)
    GTEST_SKIP() << "OpenSSL allocated before the test could install its counting allocator";
  for (Cipher c : {Cipher::Aes256Gcm, Cipher::Aes128Gcm, Cipher::ChaCha20Poly1305}) {
    SCOPED_TRACE(std::string(cipher_name(c)));
    const std::vector<std::uint8_t> key(cipher_key_size(c), 7);
    const long at_start = allocations().load();
    Aead aead(c, key);
    ASSERT_GT(allocations().load() - at_start, 0) << "the counting allocator is not active";
    auto buf = test::pattern(4096);
    const auto aad = test::pattern(40, 1);
    Tag tag{};
    MessageCounter seq(1);
    aead.seal(seq.next(), aad, buf, buf, tag);  // warm-up (lazy provider state, if any)
    const long before = allocations().load();
    for (int i = 0; i < 1000; ++i) {
      const StreamPosition n = seq.next();
      aead.seal(n, aad, buf, buf, tag);
      ASSERT_TRUE(aead.try_open(n, aad, buf, tag, buf));
    }
    EXPECT_EQ(allocations().load() - before, 0) << "seal/open allocated";
  }
}

}  // namespace
}  // namespace tt::tee
