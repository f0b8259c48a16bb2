#include "comm/adversary/adversary_gcm.h"

#include <array>
#include <bitset>

namespace tt::comm::gcm {

namespace {

constexpr Block kOne{std::uint64_t{1} << 63, 0};

Block operator^(Block a, Block b) {
  return {a.hi ^ b.hi, a.lo ^ b.lo};
}

bool bit(const Block& x, std::size_t i) {
  return ((i < 64 ? x.hi >> (63 - i) : x.lo >> (127 - i)) & 1) != 0;
}

Block single_bit(std::size_t i) {
  return i < 64 ? Block{std::uint64_t{1} << (63 - i), 0} : Block{0, std::uint64_t{1} << (127 - i)};
}

// The lengths block of GCM: be64(bits of AD) || be64(bits of ciphertext).
Block lengths(std::size_t aad_bytes, std::size_t text_bytes) {
  return {8 * static_cast<std::uint64_t>(aad_bytes), 8 * static_cast<std::uint64_t>(text_bytes)};
}

// What the AD contributes to GHASH: sum over its blocks A_i (i = 1..m) of A_i * H^(m + n + 2 - i),
// with n the ciphertext's blocks.
struct AdContribution {
  std::vector<Block> powers;  // [i-1]: H^(m + n + 2 - i)

  AdContribution(Block h, std::size_t aad_bytes, std::size_t text_bytes) {
    const std::size_t m = (aad_bytes + 15) / 16;
    const std::size_t n = (text_bytes + 15) / 16;
    for (std::size_t i = 1; i <= m; ++i) powers.push_back(power(h, m + n + 2 - i));
  }
  Block of(const std::vector<std::uint8_t>& aad) const {
    Block sum{};
    for (std::size_t i = 0; i < powers.size(); ++i) {
      std::array<std::uint8_t, 16> b{};
      for (std::size_t j = 0; j < 16 && 16 * i + j < aad.size(); ++j) b[j] = aad[16 * i + j];
      sum = sum ^ mul(load(b.data()), powers[i]);
    }
    return sum;
  }
  Block of_bit(std::size_t b) const { return mul(single_bit(b % 128), powers[b / 128]); }
};

// Gaussian elimination over GF(2): which of `columns` (at most 128) sum to `target`.
std::optional<std::bitset<128>> solve(const std::vector<Block>& columns, Block target) {
  struct Row {
    Block v;
    std::bitset<128> used;
  };
  std::array<std::optional<Row>, 128> pivot;  // by leading bit
  auto reduce = [&](Row r) {
    for (std::size_t lead = 0; lead < 128; ++lead) {
      if (!bit(r.v, lead)) continue;
      if (!pivot[lead]) return r;
      r.v = r.v ^ pivot[lead]->v;
      r.used ^= pivot[lead]->used;
    }
    return r;
  };
  for (std::size_t k = 0; k < columns.size() && k < 128; ++k) {
    Row r = reduce({columns[k], std::bitset<128>().set(k)});
    for (std::size_t lead = 0; lead < 128; ++lead) {
      if (bit(r.v, lead)) {
        pivot[lead] = r;
        break;
      }
    }
  }
  const Row t = reduce({target, {}});
  if (!(t.v == Block{})) return std::nullopt;
  return t.used;
}

}  // namespace

Block load(const std::uint8_t* p) {
  Block b;
  for (int i = 0; i < 8; ++i) b.hi = b.hi << 8 | p[i];
  for (int i = 8; i < 16; ++i) b.lo = b.lo << 8 | p[i];
  return b;
}

// NIST SP 800-38D, algorithm 1.
Block mul(Block x, Block y) {
  Block z{};
  Block v = y;
  for (std::size_t i = 0; i < 128; ++i) {
    if (bit(x, i)) z = z ^ v;
    const bool lsb = (v.lo & 1) != 0;
    v.lo = (v.lo >> 1) | (v.hi << 63);
    v.hi >>= 1;
    if (lsb) v.hi ^= 0xe100000000000000ULL;
  }
  return z;
}

Block power(Block x, std::uint64_t e) {
  Block r = kOne;
  for (; e != 0; e >>= 1) {
    if ((e & 1) != 0) r = mul(r, x);
    x = mul(x, x);
  }
  return r;
}

Block inverse(Block x) {
  Block r = kOne;
  for (int i = 0; i < 127; ++i) r = mul(mul(r, r), x);  // the 127 leading one bits of 2^128 - 2
  return mul(r, r);
}

std::optional<Opened> solve_and_open(const tee::SecretBytes& key, const tee::StreamPosition& at,
                                     tee::ByteView ciphertext, const tee::Tag& tag,
                                     std::vector<std::uint8_t> aad_template,
                                     const std::vector<std::size_t>& unknown) {
  tee::Aead aead(tee::Cipher::Aes256Gcm, key.view());
  tee::Tag t{};
  // E_K(J0): the tag of nothing (GHASH of a zero lengths block is 0).
  aead.seal(at, {}, {}, {}, t);
  const Block ej0 = load(t.data());
  // H: the tag of one zero AD block is lengths(16, 0) * H + E_K(J0).
  const std::array<std::uint8_t, 16> zero{};
  aead.seal(at, zero, {}, {}, t);
  const Block h = mul(load(t.data()) ^ ej0, inverse(lengths(16, 0)));
  // The plaintext (CTR: sealing zeros gives the key stream), then GHASH without AD of the same
  // ciphertext: what the AD adds to the genuine tag is the difference.
  Opened out;
  out.plain.assign(ciphertext.size(), 0);
  aead.seal(at, {}, out.plain, out.plain, t);
  for (std::size_t i = 0; i < ciphertext.size(); ++i) out.plain[i] ^= ciphertext[i];
  std::vector<std::uint8_t> again(ciphertext.size());
  aead.seal(at, {}, out.plain, again, t);
  const std::size_t a = aad_template.size();
  const Block ad_part = load(tag.data()) ^ load(t.data()) ^
                        mul(lengths(a, ciphertext.size()) ^ lengths(0, ciphertext.size()), h);
  const AdContribution contribution(h, a, ciphertext.size());
  std::vector<Block> columns;
  for (std::size_t b : unknown) columns.push_back(contribution.of_bit(b));
  const auto used = solve(columns, ad_part ^ contribution.of(aad_template));
  if (!used) return std::nullopt;
  for (std::size_t k = 0; k < unknown.size() && k < 128; ++k) {
    if ((*used)[k]) aad_template[unknown[k] / 8] ^= static_cast<std::uint8_t>(0x80u >> (unknown[k] % 8));
  }
  out.aad = std::move(aad_template);
  // The solution is checked the only way that counts: the message opens with it.
  if (!aead.try_open(at, out.aad, ciphertext, tag, out.plain)) return std::nullopt;
  return out;
}

}  // namespace tt::comm::gcm
