#include "tee/attestation.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "tee/errors.h"
#include "tee/hkdf.h"

namespace tt::tee {

namespace {
constexpr std::string_view kEvidenceMagic = "TTEVID01";

void append(std::vector<std::uint8_t>& out, ByteView b) {
  out.insert(out.end(), b.begin(), b.end());
}

void hash_be64(Sha256& h, std::uint64_t v) {
  std::array<std::uint8_t, 8> b{};
  store_be64(b.data(), v);
  h.update(b);
}
}  // namespace

Measurement measure(const std::filesystem::path& binary_path, std::string_view config) {
  std::ifstream in(binary_path, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(binary_path, ec);
  if (!in || ec) throw std::runtime_error("measure: cannot read binary '" + binary_path.string() + "'");
  Sha256 h;
  h.update(std::string_view("teetrain measurement v1"));
  hash_be64(h, size);
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    h.update(ByteView(reinterpret_cast<const std::uint8_t*>(buf.data()), n));
    total += n;
  }
  if (in.bad() || total != size)
    throw std::runtime_error("measure: short read of binary '" + binary_path.string() + "'");
  hash_be64(h, config.size());
  h.update(config);
  return h.finish();
}

std::vector<std::uint8_t> Evidence::signed_bytes() const {
  std::vector<std::uint8_t> out;
  out.reserve(kSerializedSize);
  append(out, bytes_of(kEvidenceMagic));
  std::array<std::uint8_t, 4> r{};
  store_be32(r.data(), rank);
  append(out, r);
  append(out, measurement);
  append(out, device_public_key);
  append(out, verifier_nonce);
  append(out, kx_public_key);
  return out;
}

std::vector<std::uint8_t> Evidence::serialize() const {
  std::vector<std::uint8_t> out = signed_bytes();
  append(out, signature);
  return out;
}

Evidence Evidence::deserialize(ByteView bytes) {
  if (bytes.size() != kSerializedSize)
    throw IntegrityError("malformed evidence: expected " + std::to_string(kSerializedSize) + " bytes, got " +
                         std::to_string(bytes.size()));
  if (!std::equal(kEvidenceMagic.begin(), kEvidenceMagic.end(), bytes.begin()))
    throw IntegrityError("malformed evidence: bad magic (not teetrain evidence v1)");
  Evidence e;
  const std::uint8_t* p = bytes.data() + kEvidenceMagic.size();
  e.rank = load_be32(p);
  p += 4;
  auto take = [&p](auto& field) {
    std::copy_n(p, field.size(), field.begin());
    p += field.size();
  };
  take(e.measurement);
  take(e.device_public_key);
  take(e.verifier_nonce);
  take(e.kx_public_key);
  take(e.signature);
  return e;
}

Evidence make_evidence(std::uint32_t rank, const Measurement& measurement, const Ed25519KeyPair& device_key,
                       const VerifierNonce& verifier_nonce, const PublicKey& kx_public_key) {
  Evidence e;
  e.rank = rank;
  e.measurement = measurement;
  e.device_public_key = device_key.public_key();
  e.verifier_nonce = verifier_nonce;
  e.kx_public_key = kx_public_key;
  e.signature = device_key.sign(e.signed_bytes());
  return e;
}

VerifyResult verify(const Evidence& evidence, const EvidencePolicy& policy) {
  if (!ed25519_verify(evidence.device_public_key, evidence.signed_bytes(), evidence.signature))
    return {false, "bad signature"};
  if (policy.rank && *policy.rank != evidence.rank) return {false, "rank mismatch"};
  if (!equal_ct(evidence.verifier_nonce, policy.nonce)) return {false, "stale nonce"};
  if (!equal_ct(evidence.measurement, policy.measurement)) return {false, "measurement mismatch"};
  if (!policy.allowed_device_keys.empty() &&
      std::none_of(policy.allowed_device_keys.begin(), policy.allowed_device_keys.end(),
                   [&](const PublicKey& k) { return equal_ct(k, evidence.device_public_key); }))
    return {false, "device key not in allow-list"};
  return {true, "ok"};
}

VerifierNonce make_verifier_nonce() {
  return random_array<32>();
}

SecretBytes derive_session_secret(const X25519KeyPair& mine, const Evidence& my_evidence,
                                  const Evidence& peer_evidence, std::string_view label) {
  if (!equal_ct(mine.public_key(), my_evidence.kx_public_key))
    throw std::invalid_argument("derive_session_secret: my evidence does not carry my X25519 key");
  const bool mine_first =
      my_evidence.rank < peer_evidence.rank ||
      (my_evidence.rank == peer_evidence.rank &&
       std::lexicographical_compare(my_evidence.kx_public_key.begin(), my_evidence.kx_public_key.end(),
                                    peer_evidence.kx_public_key.begin(), peer_evidence.kx_public_key.end()));
  const Evidence& a = mine_first ? my_evidence : peer_evidence;
  const Evidence& b = mine_first ? peer_evidence : my_evidence;
  Sha256 transcript;
  transcript.update(a.serialize()).update(b.serialize());
  const Sha256Digest salt = transcript.finish();
  const SecretBytes shared = mine.shared_secret(peer_evidence.kx_public_key);
  return hkdf(shared.view(), salt, bytes_of(label), 32);
}

}  // namespace tt::tee
