// AES-GCM arithmetic shared by the GPU kernels and the host tests (SP 800-38D, 96-bit IV only).
//
// Every function here is __host__ __device__ so the exact code the kernels run is unit-tested on a
// machine without a GPU, against OpenSSL. Nothing in this header needs the CUDA runtime: with a
// plain C++ compiler TT_HD expands to nothing.
//
// Representation. A GCM block is two big-endian 64-bit halves (hi = bytes 0..7, lo = bytes 8..15),
// so bit 0 of the spec (the x^0 coefficient) is the top bit of hi. AES state words are big-endian,
// as in FIPS-197 and OpenSSL's aes_core.c.
//
// Parallel GHASH. For ciphertext blocks C_1..C_n, G_C = sum_k C_k * H^(n-k+1). Leading zero blocks
// do not change G_C, so the kernel pads each message at the FRONT with `pad` virtual zero blocks
// until its length is a whole number of tiles (kTileBlocks); then every tile has the same shape:
//  - lane l of a warp takes blocks l, l+32, l+64, ... of the tile and runs Horner with H^32;
//  - the tile value is T = sum_l Y_l * H^(32-l)              (lane_tile + warp XOR);
//  - G_C = sum_t T_t * H^(kTileBlocks * (tiles-1-t))          (finish_group + block XOR);
//  - S = (G_A * H^n  xor  G_C  xor  L) * H, tag = E_K(J0) xor S  (ghash_finish).
// XOR is addition in GF(2^128), so the per-lane and per-group values combine in any order.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TT_HD __host__ __device__ __forceinline__
#else
#define TT_HD inline
#endif

namespace tt::tee::cuda::gcm {

// ---- sizes --------------------------------------------------------------------------------------

inline constexpr std::uint32_t kLanes = 32;
inline constexpr std::uint32_t kStepsPerTile = 64;
// 2048 blocks = 32 KiB per tile: one slow multiply per lane per 64 blocks keeps the combination
// overhead small, while a 64 KiB message still splits over two warps.
inline constexpr std::uint32_t kTileBlocks = kLanes * kStepsPerTile;
inline constexpr std::uint32_t kTileLog2 = 11;  // kTileBlocks == 1 << kTileLog2
static_assert(kTileBlocks == (1u << kTileLog2));
// H^(2^k) for k < kPow2Count: exponents stay below 2^33 (n < 2^32 blocks plus a tile of padding).
inline constexpr std::uint32_t kPow2Count = 40;
inline constexpr std::uint32_t kMaxAad = 96;
inline constexpr std::uint32_t kMaxRoundKeyWords = 60;  // AES-256: 4 * (14 + 1)

// ---- 128-bit blocks -----------------------------------------------------------------------------

struct alignas(16) Block128 {
  std::uint64_t hi;
  std::uint64_t lo;
};

TT_HD Block128 bxor(Block128 a, Block128 b) {
  return Block128{a.hi ^ b.hi, a.lo ^ b.lo};
}
TT_HD bool is_zero(Block128 a) {
  return (a.hi | a.lo) == 0;
}
// The field's multiplicative identity: the polynomial 1 is bit 0, the top bit of the first byte.
TT_HD Block128 gf_one() {
  return Block128{0x8000000000000000ull, 0};
}
// Byte i (0..15) of the block in wire order.
TT_HD std::uint32_t byte_at(Block128 a, std::uint32_t i) {
  const std::uint64_t half = i < 8 ? a.hi : a.lo;
  return static_cast<std::uint32_t>(half >> (56 - 8 * (i & 7))) & 0xffu;
}
// Big-endian bytes <-> block; `bytes` < 16 reads/writes a prefix (the rest reads as zero).
TT_HD Block128 load_block_bytes(const std::uint8_t* p, std::uint32_t bytes) {
  Block128 b{0, 0};
  for (std::uint32_t i = 0; i < 16; ++i) {
    const std::uint64_t v = i < bytes ? p[i] : 0;
    if (i < 8)
      b.hi |= v << (56 - 8 * i);
    else
      b.lo |= v << (56 - 8 * (i - 8));
  }
  return b;
}
TT_HD void store_block_bytes(std::uint8_t* p, Block128 b, std::uint32_t bytes) {
  for (std::uint32_t i = 0; i < bytes && i < 16; ++i) p[i] = static_cast<std::uint8_t>(byte_at(b, i));
}
// Keeps the first `bytes` bytes, zeroes the rest (a partial last block is zero-padded for GHASH).
TT_HD Block128 keep_prefix(Block128 b, std::uint32_t bytes) {
  if (bytes >= 16) return b;
  if (bytes >= 8) {
    const std::uint64_t m = bytes == 8 ? 0 : ~0ull << (64 - 8 * (bytes - 8));
    return Block128{b.hi, b.lo & m};
  }
  const std::uint64_t m = bytes == 0 ? 0 : ~0ull << (64 - 8 * bytes);
  return Block128{b.hi & m, 0};
}

// ---- GF(2^128) ----------------------------------------------------------------------------------

// SP 800-38D Algorithm 1, branch-free on the data (masks instead of ifs): the reference multiply,
// used where few multiplications happen (combining partial sums, building tables).
TT_HD Block128 gf_mul(Block128 x, Block128 y) {
  Block128 z{0, 0};
  Block128 v = y;
  for (int half = 0; half < 2; ++half) {
    const std::uint64_t bits = half == 0 ? x.hi : x.lo;
    for (int i = 63; i >= 0; --i) {
      const std::uint64_t take = 0 - ((bits >> i) & 1);
      z.hi ^= v.hi & take;
      z.lo ^= v.lo & take;
      const std::uint64_t carry = 0 - (v.lo & 1);
      v.lo = (v.lo >> 1) | (v.hi << 63);
      v.hi = (v.hi >> 1) ^ (0xE100000000000000ull & carry);
    }
  }
  return z;
}

// H^e from the table pow2[k] = H^(2^k) (square-and-multiply; e is public: it comes from lengths).
TT_HD Block128 gf_pow(std::uint64_t e, const Block128* pow2) {
  Block128 r = gf_one();
  for (std::uint32_t k = 0; k < kPow2Count && e != 0; ++k, e >>= 1)
    if (e & 1) r = gf_mul(r, pow2[k]);
  return r;
}

// x * M for a fixed M through 16 byte tables: t(i, b) = (byte b at position i) * M. Multiplication
// is linear over XOR, so x * M = XOR_i t(i, byte_i(x)): 16 lookups, no shifts, no reduction.
template <class Tab>
TT_HD Block128 gf_mul_table(Block128 x, const Tab& t) {
  Block128 z{0, 0};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (std::uint32_t i = 0; i < 16; ++i) z = bxor(z, t(i, byte_at(x, i)));
  return z;
}

// Table accessor over a [16][256] array (host memory, device global or shared memory).
struct ByteTable {
  const Block128* t;
  TT_HD Block128 operator()(std::uint32_t i, std::uint32_t b) const { return t[i * 256 + b]; }
};

// Tile values of one message, indexed from its first tile (host or device memory).
struct PartialArray {
  const Block128* p;
  TT_HD Block128 operator()(std::uint32_t t) const { return p[t]; }
};

// ---- AES ----------------------------------------------------------------------------------------

TT_HD std::uint32_t rotr32(std::uint32_t x, std::uint32_t n) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(x, x, n);
#else
  return (x >> n) | (x << ((32 - n) & 31));
#endif
}
TT_HD std::uint32_t bswap32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, 0, 0x0123);
#else
  return __builtin_bswap32(x);
#endif
}

// S-box and Te0 (Te0[x] = S[x]*{02,01,01,03}); Te1..Te3 are byte rotations of Te0, and the final
// round reads S[x] as byte 1 of Te0[x], so one 1 KiB table is all the kernels need.
struct AesTables {
  std::array<std::uint8_t, 256> sbox;
  std::array<std::uint32_t, 256> te0;
};
constexpr std::uint8_t xtime(std::uint8_t a) {
  return static_cast<std::uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
}
constexpr std::uint8_t rotl8(std::uint8_t a, int n) {
  return static_cast<std::uint8_t>((a << n) | (a >> (8 - n)));
}
constexpr AesTables make_aes_tables() {
  AesTables t{};
  // Walk the multiplicative group with generator 3 (p) and its inverse (q): q = p^-1 at each step.
  std::uint8_t p = 1, q = 1;
  do {
    p = static_cast<std::uint8_t>(p ^ xtime(p));
    q = static_cast<std::uint8_t>(q ^ (q << 1));
    q = static_cast<std::uint8_t>(q ^ (q << 2));
    q = static_cast<std::uint8_t>(q ^ (q << 4));
    if (q & 0x80) q = static_cast<std::uint8_t>(q ^ 0x09);
    const std::uint8_t x =
        static_cast<std::uint8_t>(q ^ rotl8(q, 1) ^ rotl8(q, 2) ^ rotl8(q, 3) ^ rotl8(q, 4));
    t.sbox[p] = static_cast<std::uint8_t>(x ^ 0x63);
  } while (p != 1);
  t.sbox[0] = 0x63;
  for (int i = 0; i < 256; ++i) {
    const std::uint32_t s = t.sbox[i];
    const std::uint32_t s2 = xtime(static_cast<std::uint8_t>(s));
    t.te0[i] = (s2 << 24) | (s << 16) | (s << 8) | (s2 ^ s);
  }
  return t;
}

struct RoundKeys {
  std::uint32_t w[kMaxRoundKeyWords];
};

// Te0 accessor over a plain 256-entry array (host memory or device global memory).
struct PlainTe {
  const std::uint32_t* t;
  TT_HD std::uint32_t operator()(std::uint32_t x) const { return t[x]; }
};

// One AES encryption of the big-endian state s[0..3] with Nr rounds (10: AES-128, 14: AES-256).
template <int Nr, class Te>
TT_HD void aes_encrypt(const RoundKeys& rk, const Te& te, std::uint32_t s[4]) {
  std::uint32_t s0 = s[0] ^ rk.w[0], s1 = s[1] ^ rk.w[1], s2 = s[2] ^ rk.w[2], s3 = s[3] ^ rk.w[3];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 1; r < Nr; ++r) {
    const std::uint32_t t0 = te(s0 >> 24) ^ rotr32(te((s1 >> 16) & 0xff), 8) ^
                             rotr32(te((s2 >> 8) & 0xff), 16) ^ rotr32(te(s3 & 0xff), 24) ^ rk.w[4 * r];
    const std::uint32_t t1 = te(s1 >> 24) ^ rotr32(te((s2 >> 16) & 0xff), 8) ^
                             rotr32(te((s3 >> 8) & 0xff), 16) ^ rotr32(te(s0 & 0xff), 24) ^ rk.w[4 * r + 1];
    const std::uint32_t t2 = te(s2 >> 24) ^ rotr32(te((s3 >> 16) & 0xff), 8) ^
                             rotr32(te((s0 >> 8) & 0xff), 16) ^ rotr32(te(s1 & 0xff), 24) ^ rk.w[4 * r + 2];
    const std::uint32_t t3 = te(s3 >> 24) ^ rotr32(te((s0 >> 16) & 0xff), 8) ^
                             rotr32(te((s1 >> 8) & 0xff), 16) ^ rotr32(te(s2 & 0xff), 24) ^ rk.w[4 * r + 3];
    s0 = t0;
    s1 = t1;
    s2 = t2;
    s3 = t3;
  }
  // Last round: SubBytes + ShiftRows only; S[x] is byte 1 (bits 8..15) of Te0[x].
  auto sb = [&te](std::uint32_t x) { return (te(x) >> 8) & 0xffu; };
  s[0] =
      ((sb(s0 >> 24) << 24) | (sb((s1 >> 16) & 0xff) << 16) | (sb((s2 >> 8) & 0xff) << 8) | sb(s3 & 0xff)) ^
      rk.w[4 * Nr];
  s[1] =
      ((sb(s1 >> 24) << 24) | (sb((s2 >> 16) & 0xff) << 16) | (sb((s3 >> 8) & 0xff) << 8) | sb(s0 & 0xff)) ^
      rk.w[4 * Nr + 1];
  s[2] =
      ((sb(s2 >> 24) << 24) | (sb((s3 >> 16) & 0xff) << 16) | (sb((s0 >> 8) & 0xff) << 8) | sb(s1 & 0xff)) ^
      rk.w[4 * Nr + 2];
  s[3] =
      ((sb(s3 >> 24) << 24) | (sb((s0 >> 16) & 0xff) << 16) | (sb((s1 >> 8) & 0xff) << 8) | sb(s2 & 0xff)) ^
      rk.w[4 * Nr + 3];
}

// E_K(IV || ctr) as a block: the counter blocks of GCM with a 96-bit IV.
template <int Nr, class Te>
TT_HD Block128 aes_ctr_block(const RoundKeys& rk, const Te& te, const std::uint32_t iv[3],
                             std::uint32_t ctr) {
  std::uint32_t s[4] = {iv[0], iv[1], iv[2], ctr};
  aes_encrypt<Nr>(rk, te, s);
  return Block128{(std::uint64_t{s[0]} << 32) | s[1], (std::uint64_t{s[2]} << 32) | s[3]};
}

// ---- one message --------------------------------------------------------------------------------

// Tile layout of a message of `length` bytes: n blocks, front padding, whole tiles.
struct TileLayout {
  std::uint32_t n_blocks;
  std::uint32_t pad_blocks;
  std::uint32_t num_tiles;
};
TT_HD TileLayout tile_layout(std::uint64_t length) {
  const std::uint64_t n = (length + 15) / 16;
  const std::uint64_t tiles = (n + kTileBlocks - 1) / kTileBlocks;
  return TileLayout{static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(tiles * kTileBlocks - n),
                    static_cast<std::uint32_t>(tiles)};
}

// What a lane needs to know about its message (copied into registers by the kernel).
struct MsgView {
  const std::uint8_t* in;  // plaintext (seal) or ciphertext (open), length bytes
  std::uint8_t* out;       // ciphertext (seal) or plaintext (open), length bytes
  std::uint32_t n_blocks;
  std::uint32_t pad_blocks;
  std::uint32_t tail_bytes;  // bytes in the last block, 1..16
  std::uint32_t aligned;     // in and out are 16-byte aligned: whole blocks move as one 16-byte access
  std::uint32_t iv[3];       // the nonce as big-endian words
};

// Host side: the view of a message of `length` bytes with a 12-byte nonce.
inline MsgView make_msg_view(const std::uint8_t* in, std::uint8_t* out, std::uint64_t length,
                             const std::uint8_t* nonce) {
  const TileLayout layout = tile_layout(length);
  MsgView v{};
  v.in = in;
  v.out = out;
  v.n_blocks = layout.n_blocks;
  v.pad_blocks = layout.pad_blocks;
  v.tail_bytes =
      static_cast<std::uint32_t>(length == 0 ? 0 : length - (std::uint64_t{layout.n_blocks} - 1) * 16);
  const auto bits = reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out);
  v.aligned = (bits & 15) == 0 ? 1u : 0u;
  for (int w = 0; w < 3; ++w)
    v.iv[w] = (std::uint32_t{nonce[4 * w]} << 24) | (std::uint32_t{nonce[4 * w + 1]} << 16) |
              (std::uint32_t{nonce[4 * w + 2]} << 8) | nonce[4 * w + 3];
  return v;
}

TT_HD Block128 load_block(const std::uint8_t* p, std::uint32_t bytes, bool aligned) {
#if defined(__CUDA_ARCH__)
  if (aligned && bytes == 16) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    return Block128{(std::uint64_t{bswap32(u.x)} << 32) | bswap32(u.y),
                    (std::uint64_t{bswap32(u.z)} << 32) | bswap32(u.w)};
  }
#else
  (void)aligned;
#endif
  return load_block_bytes(p, bytes);
}
TT_HD void store_block(std::uint8_t* p, Block128 b, std::uint32_t bytes, bool aligned) {
#if defined(__CUDA_ARCH__)
  if (aligned && bytes == 16) {
    *reinterpret_cast<uint4*>(p) = make_uint4(
        bswap32(static_cast<std::uint32_t>(b.hi >> 32)), bswap32(static_cast<std::uint32_t>(b.hi)),
        bswap32(static_cast<std::uint32_t>(b.lo >> 32)), bswap32(static_cast<std::uint32_t>(b.lo)));
    return;
  }
#else
  (void)aligned;
#endif
  store_block_bytes(p, b, bytes);
}

// CTR for real block k (0-based): counter inc32(J0) + k = 2 + k. Writes the output block and
// returns the (zero-padded) ciphertext block that GHASH absorbs.
template <int Nr, bool kDecrypt, class Te>
TT_HD Block128 crypt_block(const MsgView& m, std::uint32_t k, const RoundKeys& rk, const Te& te) {
  const Block128 ks = aes_ctr_block<Nr>(rk, te, m.iv, 2u + k);
  const std::uint32_t bytes = k + 1 == m.n_blocks ? m.tail_bytes : 16u;
  const std::size_t off = std::size_t{k} * 16;
  const Block128 in = load_block(m.in + off, bytes, m.aligned != 0);
  const Block128 out = bxor(in, ks);
  store_block(m.out + off, out, bytes, m.aligned != 0);
  return kDecrypt ? in : keep_prefix(out, bytes);
}

// One lane's share of tile `tile` of a message: Y_l * H^(32-l) (see the header comment).
// h32 is the byte table of H^32; hpow[i] = H^i for i = 0..32.
template <int Nr, bool kDecrypt, class Te, class Tab>
TT_HD Block128 lane_tile(const MsgView& m, std::uint32_t tile, std::uint32_t lane, const RoundKeys& rk,
                         const Te& te, const Tab& h32, const Block128* hpow) {
  const std::int64_t v0 = std::int64_t{tile} * kTileBlocks;
  const std::int64_t pad = m.pad_blocks;
  // Steps made only of front padding leave Y at zero; start at the first step holding real data.
  const std::uint32_t s_begin = v0 >= pad ? 0u : static_cast<std::uint32_t>((pad - v0) / kLanes);
  Block128 y{0, 0};
  for (std::uint32_t s = s_begin; s < kStepsPerTile; ++s) {
    const std::int64_t k = v0 + std::int64_t{s} * kLanes + lane - pad;
    Block128 c{0, 0};
    if (k >= 0) c = crypt_block<Nr, kDecrypt>(m, static_cast<std::uint32_t>(k), rk, te);
    y = bxor(gf_mul_table(y, h32), c);
  }
  return gf_mul(y, hpow[kLanes - lane]);
}

// Thread `thread` of `nthreads` combining a message's tile values T_0..T_{tiles-1}: a contiguous
// group by Horner with H^kTileBlocks, then scaled by H^(kTileBlocks * tiles after the group).
template <class Partial>
TT_HD Block128 finish_group(std::uint32_t thread, std::uint32_t nthreads, std::uint32_t num_tiles,
                            const Partial& tile_value, const Block128* pow2) {
  const std::uint32_t per = (num_tiles + nthreads - 1) / nthreads;
  const std::uint64_t begin = std::uint64_t{thread} * per;
  const std::uint64_t end = begin + per < num_tiles ? begin + per : num_tiles;
  if (begin >= end) return Block128{0, 0};
  const Block128 y = pow2[kTileLog2];  // H^kTileBlocks
  Block128 v{0, 0};
  for (std::uint64_t t = begin; t < end; ++t)
    v = bxor(gf_mul(v, y), tile_value(static_cast<std::uint32_t>(t)));
  const std::uint64_t after = num_tiles - end;
  return after == 0 ? v : gf_mul(v, gf_pow(after << kTileLog2, pow2));
}

// S = (G_A * H^n xor G_C xor L) * H with L = [len(A)]_64 || [len(C)]_64 in bits.
TT_HD Block128 ghash_finish(Block128 g_c, const std::uint8_t* aad, std::uint32_t aad_len,
                            std::uint64_t length, std::uint32_t n_blocks, Block128 h, const Block128* pow2) {
  Block128 s = g_c;
  if (aad_len != 0) {
    Block128 g_a{0, 0};
    for (std::uint32_t off = 0; off < aad_len; off += 16) {
      const std::uint32_t bytes = aad_len - off < 16 ? aad_len - off : 16u;
      g_a = gf_mul(bxor(g_a, load_block_bytes(aad + off, bytes)), h);
    }
    s = bxor(s, gf_mul(g_a, gf_pow(n_blocks, pow2)));
  }
  s = bxor(s, Block128{std::uint64_t{aad_len} * 8, length * 8});
  return gf_mul(s, h);
}

// The tag: E_K(J0) xor S, J0 = IV || 0^31 || 1, given the combined ciphertext sum G_C.
template <int Nr, class Te>
TT_HD Block128 final_tag(Block128 g_c, const MsgView& m, const std::uint8_t* aad, std::uint32_t aad_len,
                         std::uint64_t length, const RoundKeys& rk, const Te& te, Block128 h,
                         const Block128* pow2) {
  const Block128 s = ghash_finish(g_c, aad, aad_len, length, m.n_blocks, h, pow2);
  return bxor(s, aes_ctr_block<Nr>(rk, te, m.iv, 1u));
}

}  // namespace tt::tee::cuda::gcm
