// Host tests of the GPU AES-GCM arithmetic (tee/cuda/gcm_math.h, gcm_key.h): the very functions the
// kernels run, checked against OpenSSL on a machine without a GPU. The simulation below replays the
// kernels' decomposition (tiles, 32 lanes, finish threads) sequentially, so a pass here means the
// GPU run can only differ through the CUDA plumbing (launch, memory, warp/block reductions).
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "tee/crypto/aead.h"
#include "tee/cuda/gcm_key.h"
#include "tee/cuda/gcm_math.h"
#include "tee/detail/nonce.h"
#include "tests/tee/test_util.h"

namespace tt::tee::cuda::gcm {
namespace {

// OpenSSL at nonces of the test's choosing: the AEAD inside tee/.
using Aead = ::tt::tee::detail::NonceAead;
using ::tt::tee::detail::Nonce;

constexpr AesTables kTables = make_aes_tables();

std::vector<std::uint8_t> random_bytes_det(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}
Block128 random_block(std::mt19937_64& rng) {
  return Block128{rng(), rng()};
}
Block128 block_of(const std::vector<std::uint8_t>& b) {
  return load_block_bytes(b.data(), 16);
}
bool same(Block128 a, Block128 b) {
  return a.hi == b.hi && a.lo == b.lo;
}

std::array<std::uint8_t, 16> openssl_ecb(const std::vector<std::uint8_t>& key, const std::uint8_t* in) {
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(),
                                                                      EVP_CIPHER_CTX_free);
  const EVP_CIPHER* c = key.size() == 16 ? EVP_aes_128_ecb() : EVP_aes_256_ecb();
  std::array<std::uint8_t, 16> out{};
  int outl = 0;
  EXPECT_EQ(EVP_EncryptInit_ex(ctx.get(), c, nullptr, key.data(), nullptr), 1);
  EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
  EXPECT_EQ(EVP_EncryptUpdate(ctx.get(), out.data(), &outl, in, 16), 1);
  EXPECT_EQ(outl, 16);
  return out;
}

std::array<std::uint8_t, 16> our_ecb(const std::vector<std::uint8_t>& key, const std::uint8_t* in) {
  RoundKeys rk{};
  const int nr = aes_expand_key(key, rk);
  std::uint32_t s[4];
  for (int w = 0; w < 4; ++w) s[w] = load_be32(in + 4 * w);
  const PlainTe te{kTables.te0.data()};
  if (nr == 10)
    aes_encrypt<10>(rk, te, s);
  else
    aes_encrypt<14>(rk, te, s);
  std::array<std::uint8_t, 16> out{};
  for (int w = 0; w < 4; ++w) store_be32(out.data() + 4 * w, s[w]);
  return out;
}

// SP 800-38D Algorithm 1 on byte arrays, written independently of gf_mul's two-word version.
Block128 reference_mul(Block128 xb, Block128 yb) {
  std::uint8_t x[16], v[16], z[16] = {};
  store_block_bytes(x, xb, 16);
  store_block_bytes(v, yb, 16);
  for (int i = 0; i < 128; ++i) {
    if ((x[i / 8] >> (7 - i % 8)) & 1)
      for (int j = 0; j < 16; ++j) z[j] ^= v[j];
    const bool lsb = v[15] & 1;
    for (int j = 15; j > 0; --j) v[j] = static_cast<std::uint8_t>((v[j] >> 1) | (v[j - 1] << 7));
    v[0] = static_cast<std::uint8_t>(v[0] >> 1);
    if (lsb) v[0] ^= 0xe1;
  }
  return load_block_bytes(z, 16);
}

TEST(GpuGcmMath, SboxKnownValues) {
  EXPECT_EQ(kTables.sbox[0x00], 0x63);
  EXPECT_EQ(kTables.sbox[0x01], 0x7c);
  EXPECT_EQ(kTables.sbox[0x53], 0xed);
  EXPECT_EQ(kTables.sbox[0xff], 0x16);
  EXPECT_EQ(kTables.te0[0x00], 0xc66363a5u);  // FIPS-197 / OpenSSL Te0[0]
}

TEST(GpuGcmMath, AesFips197Vectors) {
  const auto pt = test::hex("00112233445566778899aabbccddeeff");
  const auto k128 = test::hex("000102030405060708090a0b0c0d0e0f");
  const auto k256 = test::hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  EXPECT_EQ(to_hex(our_ecb(k128, pt.data())), "69c4e0d86a7b0430d8cdb78070b4c55a");
  EXPECT_EQ(to_hex(our_ecb(k256, pt.data())), "8ea2b7ca516745bfeafc49904b496089");
}

TEST(GpuGcmMath, AesMatchesOpenSslOnRandomBlocks) {
  std::mt19937_64 rng(1);
  for (std::size_t key_size : {16u, 32u}) {
    for (int k = 0; k < 8; ++k) {
      const auto key = random_bytes_det(key_size, rng);
      for (int i = 0; i < 64; ++i) {
        const auto block = random_bytes_det(16, rng);
        ASSERT_EQ(our_ecb(key, block.data()), openssl_ecb(key, block.data())) << "key size " << key_size;
      }
    }
  }
}

TEST(GpuGcmMath, RejectsBadKeySizes) {
  RoundKeys rk{};
  const std::vector<std::uint8_t> k24(24), k0;
  EXPECT_THROW(aes_expand_key(k24, rk), std::invalid_argument);
  EXPECT_THROW(aes_expand_key(k0, rk), std::invalid_argument);
}

TEST(GpuGcmMath, MulMatchesReference) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 500; ++i) {
    const Block128 x = random_block(rng), y = random_block(rng);
    ASSERT_TRUE(same(gf_mul(x, y), reference_mul(x, y)));
    ASSERT_TRUE(same(gf_mul(x, y), gf_mul(y, x)));
  }
  const Block128 x = random_block(rng);
  EXPECT_TRUE(same(gf_mul(x, gf_one()), x));
  EXPECT_TRUE(is_zero(gf_mul(x, Block128{0, 0})));
}

// McGrew & Viega test case 2: GHASH(H, {}, C) = f38cbb1ad69223dcc3457ae5b6b0f885.
TEST(GpuGcmMath, GhashKnownAnswer) {
  const Block128 h = block_of(test::hex("66e94bd4ef8a2c3b884cfa59ca342b2e"));
  const Block128 c = block_of(test::hex("0388dace60b6a392f328c2b971b2fe78"));
  const Block128 x1 = gf_mul(c, h);
  const Block128 x2 = gf_mul(bxor(x1, Block128{0, 128}), h);
  std::array<std::uint8_t, 16> out{};
  store_block_bytes(out.data(), x2, 16);
  EXPECT_EQ(to_hex(out), "f38cbb1ad69223dcc3457ae5b6b0f885");
}

TEST(GpuGcmMath, KeyMaterialTablesAndPowers) {
  std::mt19937_64 rng(3);
  const auto key = random_bytes_det(32, rng);
  const KeyMaterial km(key);
  const DeviceKey& d = km.image();
  const std::uint8_t zero[16] = {};
  const auto h_ssl = openssl_ecb(key, zero);
  EXPECT_TRUE(same(d.h, load_block_bytes(h_ssl.data(), 16)));
  Block128 p = gf_one();
  for (std::uint32_t i = 0; i <= kLanes; ++i) {
    ASSERT_TRUE(same(d.hpow[i], p)) << i;
    p = gf_mul(p, d.h);
  }
  for (std::uint64_t e : {0ull, 1ull, 2ull, 3ull, 31ull, 32ull, 33ull, 2048ull, 12345ull}) {
    Block128 r = gf_one();
    for (std::uint64_t i = 0; i < e; ++i) r = gf_mul(r, d.h);
    ASSERT_TRUE(same(gf_pow(e, d.pow2), r)) << e;
  }
  // H^(2^k) for large k via the table equals repeated squaring, and H^(a+b) = H^a * H^b.
  const std::uint64_t a = (std::uint64_t{1} << 33) + 12345, b = 987654321;
  EXPECT_TRUE(same(gf_pow(a + b, d.pow2), gf_mul(gf_pow(a, d.pow2), gf_pow(b, d.pow2))));
  const ByteTable tab{d.h32_table};
  for (int i = 0; i < 500; ++i) {
    const Block128 x = random_block(rng);
    ASSERT_TRUE(same(gf_mul_table(x, tab), gf_mul(x, d.hpow[kLanes])));
  }
}

TEST(GpuGcmMath, BlockLoadStoreAndPrefix) {
  std::mt19937_64 rng(4);
  const auto bytes = random_bytes_det(16, rng);
  const Block128 b = load_block_bytes(bytes.data(), 16);
  for (std::uint32_t n = 0; n <= 16; ++n) {
    std::uint8_t out[16] = {};
    store_block_bytes(out, b, n);
    const Block128 prefix = load_block_bytes(bytes.data(), n);
    EXPECT_TRUE(same(prefix, keep_prefix(b, n))) << n;
    for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(out[i], i < n ? bytes[i] : 0) << n << " " << i;
    for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(byte_at(b, i), bytes[i]);
  }
}

TEST(GpuGcmMath, TileLayout) {
  EXPECT_EQ(tile_layout(0).num_tiles, 0u);
  EXPECT_EQ(tile_layout(0).n_blocks, 0u);
  const TileLayout one = tile_layout(1);
  EXPECT_EQ(one.n_blocks, 1u);
  EXPECT_EQ(one.num_tiles, 1u);
  EXPECT_EQ(one.pad_blocks, kTileBlocks - 1);
  const TileLayout full = tile_layout(std::uint64_t{kTileBlocks} * 16);
  EXPECT_EQ(full.num_tiles, 1u);
  EXPECT_EQ(full.pad_blocks, 0u);
  const TileLayout big = tile_layout((std::uint64_t{1} << 36) - 32);
  EXPECT_EQ(big.n_blocks, (std::uint64_t{1} << 32) - 2);
  EXPECT_EQ(std::uint64_t{big.num_tiles} * kTileBlocks, std::uint64_t{big.n_blocks} + big.pad_blocks);
}

// The finish kernel's grouping equals plain Horner over tiles with H^kTileBlocks, for any thread count.
TEST(GpuGcmMath, FinishGroupsMatchHorner) {
  std::mt19937_64 rng(5);
  const auto key = random_bytes_det(16, rng);
  const KeyMaterial km(key);
  const DeviceKey& d = km.image();
  for (std::uint32_t tiles : {1u, 2u, 7u, 256u, 257u, 1000u}) {
    std::vector<Block128> t(tiles);
    for (auto& b : t) b = random_block(rng);
    Block128 horner{0, 0};
    const Block128 y = gf_pow(kTileBlocks, d.pow2);
    for (const Block128& b : t) horner = bxor(gf_mul(horner, y), b);
    for (std::uint32_t threads : {1u, 3u, 256u}) {
      Block128 sum{0, 0};
      for (std::uint32_t i = 0; i < threads; ++i)
        sum = bxor(sum, finish_group(i, threads, tiles, PartialArray{t.data()}, d.pow2));
      ASSERT_TRUE(same(sum, horner)) << tiles << " tiles, " << threads << " threads";
    }
  }
}

// Replays crypt_kernel + finish_kernel for one message on the host.
template <int Nr, bool kDecrypt>
Block128 simulate(const KeyMaterial& km, const MsgView& v, const std::vector<std::uint8_t>& aad,
                  std::uint64_t length, std::uint32_t finish_threads) {
  const DeviceKey& d = km.image();
  const PlainTe te{d.te0};
  const ByteTable h32{d.h32_table};
  const std::uint32_t tiles = tile_layout(length).num_tiles;
  std::vector<Block128> values(tiles);
  for (std::uint32_t t = 0; t < tiles; ++t) {
    Block128 acc{0, 0};
    for (std::uint32_t lane = 0; lane < kLanes; ++lane)
      acc = bxor(acc, lane_tile<Nr, kDecrypt>(v, t, lane, km.round_keys(), te, h32, d.hpow));
    values[t] = acc;
  }
  Block128 g_c{0, 0};
  for (std::uint32_t i = 0; i < finish_threads; ++i)
    g_c = bxor(g_c, finish_group(i, finish_threads, tiles, PartialArray{values.data()}, d.pow2));
  return final_tag<Nr>(g_c, v, aad.data(), static_cast<std::uint32_t>(aad.size()), length, km.round_keys(),
                       te, d.h, d.pow2);
}

struct SimCase {
  std::size_t key_size;
  std::size_t length;
  std::size_t aad_len;
};

class GpuGcmSimulation : public ::testing::TestWithParam<SimCase> {};

TEST_P(GpuGcmSimulation, SealAndOpenMatchOpenSsl) {
  const SimCase c = GetParam();
  std::mt19937_64 rng(c.length * 131 + c.aad_len * 7 + c.key_size);
  const auto key = random_bytes_det(c.key_size, rng);
  const auto aad = random_bytes_det(c.aad_len, rng);
  const auto nonce_bytes = random_bytes_det(12, rng);
  // Odd offsets inside the buffers, as a packed batch would have.
  std::vector<std::uint8_t> pt_buf = random_bytes_det(c.length + 1, rng);
  const std::uint8_t* pt = pt_buf.data() + 1;
  Nonce nonce;
  std::copy(nonce_bytes.begin(), nonce_bytes.end(), nonce.bytes.begin());

  Aead ssl(c.key_size == 16 ? Cipher::Aes128Gcm : Cipher::Aes256Gcm, key);
  std::vector<std::uint8_t> expected(c.length + kTagSize);
  ssl.seal_append_tag(nonce, aad, ByteView(pt, c.length), expected);

  const KeyMaterial km(key);
  std::vector<std::uint8_t> sealed(c.length + kTagSize + 1);
  std::uint8_t* ct = sealed.data() + 1;
  const MsgView sv = make_msg_view(pt, ct, c.length, nonce_bytes.data());
  for (std::uint32_t threads : {256u, 3u}) {
    const Block128 tag = km.rounds() == 10 ? simulate<10, false>(km, sv, aad, c.length, threads)
                                           : simulate<14, false>(km, sv, aad, c.length, threads);
    store_block_bytes(ct + c.length, tag, 16);
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), ct)) << "threads " << threads;
  }

  // Open: decrypts OpenSSL's ciphertext and recomputes the same tag.
  std::vector<std::uint8_t> plain(c.length + 1);
  const MsgView ov = make_msg_view(expected.data(), plain.data(), c.length, nonce_bytes.data());
  const Block128 tag = km.rounds() == 10 ? simulate<10, true>(km, ov, aad, c.length, 256)
                                         : simulate<14, true>(km, ov, aad, c.length, 256);
  EXPECT_TRUE(same(tag, load_block_bytes(expected.data() + c.length, 16)));
  EXPECT_TRUE(std::equal(pt, pt + c.length, plain.data()));
}

std::vector<SimCase> sim_cases() {
  std::vector<SimCase> v;
  const std::size_t tile_bytes = std::size_t{kTileBlocks} * 16;
  for (std::size_t key : {16u, 32u})
    for (std::size_t len :
         {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
          std::size_t{4096}, tile_bytes - 1, tile_bytes, tile_bytes + 1, 2 * tile_bytes + 33})
      for (std::size_t aad : {0u, 75u, 96u}) v.push_back({key, len, aad});
  for (std::size_t aad : {0u, 75u, 96u}) v.push_back({32, (std::size_t{1} << 20) + 5, aad});
  v.push_back({16, (std::size_t{1} << 20) + 5, 75});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Sizes, GpuGcmSimulation, ::testing::ValuesIn(sim_cases()),
                         [](const ::testing::TestParamInfo<SimCase>& i) {
                           return "k" + std::to_string(i.param.key_size * 8) + "_len" +
                                  std::to_string(i.param.length) + "_aad" + std::to_string(i.param.aad_len);
                         });

}  // namespace
}  // namespace tt::tee::cuda::gcm
