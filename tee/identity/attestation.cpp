#include "tee/identity/attestation.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "base/hex.h"
#include "tee/crypto/hkdf.h"
#include "tee/errors.h"

namespace tt::tee {

namespace {
constexpr std::string_view kEvidenceMagic = "TTEVID02";

// resize + memcpy rather than insert(): GCC 12 misreports insert() of a span here (-Wstringop-overflow).
void append(std::vector<std::uint8_t>& out, ByteView b) {
  const std::size_t at = out.size();
  out.resize(at + b.size());
  if (!b.empty()) std::memcpy(out.data() + at, b.data(), b.size());
}

bool listed(const std::vector<Sha256Digest>& list, const Sha256Digest& d) {
  return std::any_of(list.begin(), list.end(), [&](const Sha256Digest& x) { return equal_ct(x, d); });
}

std::string expected_text(const std::vector<Sha256Digest>& list) {
  std::string s;
  for (const auto& d : list) s += (s.empty() ? "" : ", ") + short_hex(to_hex(d), 16, "..");
  return list.size() == 1 ? "expected " + s : "expected one of " + s;
}
}  // namespace

Sha256Digest Measurements::combined() const {
  Sha256 h;
  h.update(std::string_view("teetrain measurement v2")).update(binary).update(config);
  return h.finish();
}

Sha256Digest measure_binary(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("measure: cannot read binary '" + path.string() + "'");
  Sha256 h;
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(
        ByteView(reinterpret_cast<const std::uint8_t*>(buf.data()), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) throw InputError("measure: read error on binary '" + path.string() + "'");
  return h.finish();
}

Measurements measure(const std::filesystem::path& binary_path, std::string_view config) {
  return {measure_binary(binary_path), sha256(config)};
}

std::vector<std::uint8_t> Evidence::signed_bytes() const {
  std::vector<std::uint8_t> out;
  out.reserve(kFixedSize + certificate.size());
  append(out, bytes_of(kEvidenceMagic));
  std::array<std::uint8_t, 4> be{};
  store_be32(be.data(), rank);
  append(out, be);
  append(out, measurement.binary);
  append(out, measurement.config);
  append(out, verifier_nonce);
  append(out, kx_public_key);
  append(out, device_public_key);
  store_be32(be.data(), static_cast<std::uint32_t>(certificate.size()));
  append(out, be);
  append(out, certificate);
  return out;
}

std::vector<std::uint8_t> Evidence::serialize() const {
  std::vector<std::uint8_t> out = signed_bytes();
  append(out, signature);
  return out;
}

Evidence Evidence::deserialize(ByteView bytes) {
  if (bytes.size() < kFixedSize || bytes.size() > kMaxSerializedSize)
    throw IntegrityError("malformed evidence: " + std::to_string(bytes.size()) + " bytes (expected " +
                         std::to_string(kFixedSize) + " .. " + std::to_string(kMaxSerializedSize) + ")");
  if (!std::equal(kEvidenceMagic.begin(), kEvidenceMagic.end(), bytes.begin()))
    throw IntegrityError("malformed evidence: bad magic (not teetrain evidence v2)");
  Evidence e;
  const std::uint8_t* p = bytes.data() + kEvidenceMagic.size();
  e.rank = load_be32(p);
  p += 4;
  auto take = [&p](auto& field) {
    std::copy_n(p, field.size(), field.begin());
    p += field.size();
  };
  take(e.measurement.binary);
  take(e.measurement.config);
  take(e.verifier_nonce);
  take(e.kx_public_key);
  take(e.device_public_key);
  const std::uint32_t cert_len = load_be32(p);
  p += 4;
  if (cert_len != bytes.size() - kFixedSize)
    throw IntegrityError("malformed evidence: certificate length " + std::to_string(cert_len) +
                         " does not match the message size");
  e.certificate.resize(cert_len);
  if (cert_len > 0) std::memcpy(e.certificate.data(), p, cert_len);
  p += cert_len;
  take(e.signature);
  return e;
}

Evidence make_evidence(std::uint32_t rank, const Measurements& measurement, const Ed25519KeyPair& device_key,
                       const std::vector<std::uint8_t>& certificate, const VerifierNonce& verifier_nonce,
                       const PublicKey& kx_public_key) {
  Evidence e;
  e.rank = rank;
  e.measurement = measurement;
  e.verifier_nonce = verifier_nonce;
  e.kx_public_key = kx_public_key;
  e.device_public_key = device_key.public_key();
  e.certificate = certificate;
  e.signature = device_key.sign(e.signed_bytes());
  return e;
}

namespace {

// Who signed: the certified device key when there is an anchor.
VerifyResult check_identity(const Evidence& e, const TrustAnchor* anchor) {
  if (anchor == nullptr) return {true, "ok"};
  if (e.certificate.empty()) return {false, "no device certificate (the peer runs without a root of trust)"};
  try {
    const Certificate cert = Certificate::from_der(e.certificate);
    const ChainVerdict chain = anchor->verify(cert);
    if (!chain) return {false, chain.reason};
    if (!equal_ct(cert.ed25519_public_key(), e.device_public_key))
      return {false, "evidence signed by a key that is not the certified device key"};
  } catch (const IntegrityError& err) {
    return {false, err.what()};
  }
  return {true, "ok"};
}

}  // namespace

VerifyResult verify(const Evidence& e, const EvidenceCheck& check) {
  if (VerifyResult id = check_identity(e, check.anchor); !id) return id;
  if (!ed25519_verify(e.device_public_key, e.signed_bytes(), e.signature)) return {false, "bad signature"};
  if (check.rank && *check.rank != e.rank)
    return {false, "rank mismatch (claims rank " + std::to_string(e.rank) + ")"};
  if (!equal_ct(e.verifier_nonce, check.nonce))
    return {false, "stale nonce: the evidence does not answer this verifier's challenge (replayed?)"};
  if (check.policy != nullptr) {
    if (!listed(check.policy->binaries, e.measurement.binary))
      return {false, "binary measurement " + short_hex(to_hex(e.measurement.binary), 16, "..") +
                         " is not in the policy (" + expected_text(check.policy->binaries) + ")"};
    if (!listed(check.policy->configs, e.measurement.config))
      return {false, "configuration measurement " + short_hex(to_hex(e.measurement.config), 16, "..") +
                         " is not in the policy (" + expected_text(check.policy->configs) +
                         "; was the rank started with other flags?)"};
  }
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
  return derive_transcript_secret(mine, peer_evidence.kx_public_key, a.serialize(), b.serialize(), label);
}

SecretBytes derive_transcript_secret(const X25519KeyPair& mine, const PublicKey& peer_kx, ByteView first,
                                     ByteView second, std::string_view label) {
  const Sha256Digest salt = Sha256().update(first).update(second).finish();
  const SecretBytes shared = mine.shared_secret(peer_kx);
  return hkdf(shared.view(), salt, bytes_of(label), 32);
}

}  // namespace tt::tee
