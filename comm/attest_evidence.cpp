#include "comm/attest_evidence.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "engine/core/error.h"
#include "tee/bytes.h"

namespace tt::comm {

tee::Measurement expected_measurement(const AttestConfig& config) {
  if (config.measurement_override) return *config.measurement_override;
  try {
    return tee::measure(config.binary, config.run_config);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
}

tee::Ed25519KeyPair load_device_key(const AttestConfig& config) {
  if (config.device_key_pem.empty()) return tee::Ed25519KeyPair::generate();
  try {
    return tee::Ed25519KeyPair::load_pem(config.device_key_pem);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
}

std::vector<tee::PublicKey> load_allow_list(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError("allow-list '" + path.string() + "': cannot open for reading");
  std::vector<tee::PublicKey> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string hex;
    if (!(words >> hex)) continue;
    std::string extra;
    std::vector<std::uint8_t> raw;
    try {
      raw = tee::from_hex(hex);
    } catch (const std::invalid_argument&) {
      raw.clear();
    }
    if (raw.size() != 32 || (words >> extra))
      throw InputError("allow-list '" + path.string() + "' line " + std::to_string(number) +
                       ": expected one 64-hex-digit Ed25519 public key");
    tee::PublicKey k{};
    std::copy(raw.begin(), raw.end(), k.begin());
    keys.push_back(k);
  }
  return keys;
}

tee::Evidence make_local_evidence(const AttestConfig& config, std::uint32_t rank,
                                  const tee::VerifierNonce& nonce) {
  const auto device = load_device_key(config);
  const auto kx = tee::X25519KeyPair::generate();  // bound in, then forgotten: this evidence agrees no key
  return tee::make_evidence(rank, expected_measurement(config), device, nonce, kx.public_key());
}

tee::VerifyResult verify_evidence(const tee::Evidence& evidence, const AttestConfig& expect,
                                  std::optional<std::uint32_t> rank,
                                  std::optional<tee::VerifierNonce> nonce) {
  tee::EvidencePolicy policy;
  policy.measurement = expected_measurement(expect);
  policy.nonce = nonce.value_or(evidence.verifier_nonce);
  policy.rank = rank;
  policy.allowed_device_keys = expect.allowed_device_keys;
  return tee::verify(evidence, policy);
}

void save_evidence(const std::filesystem::path& path, const tee::Evidence& evidence) {
  const auto bytes = evidence.serialize();
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw RunError("evidence '" + path.string() + "': cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RunError("evidence '" + path.string() + "': cannot rename into place: " + ec.message());
}

tee::Evidence load_evidence(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("evidence '" + path.string() + "': cannot open for reading");
  // One byte more than a valid file may hold, so an over-long file is caught as malformed.
  std::vector<std::uint8_t> bytes(tee::Evidence::kSerializedSize + 1);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  try {
    return tee::Evidence::deserialize(bytes);
  } catch (const tee::IntegrityError& e) {
    throw tee::IntegrityError("evidence '" + path.string() + "': " + e.what());
  }
}

std::string describe(const tee::Evidence& e) {
  const bool signature_ok = tee::ed25519_verify(e.device_public_key, e.signed_bytes(), e.signature);
  std::ostringstream os;
  os << "evidence (teetrain emulated attestation, " << tee::Evidence::kSerializedSize << " bytes)\n"
     << "  rank               " << e.rank << "\n"
     << "  measurement        " << tee::to_hex(e.measurement) << "  (SHA-256 of binary + run config)\n"
     << "  device public key  " << tee::to_hex(e.device_public_key) << "  (Ed25519)\n"
     << "  verifier nonce     " << tee::to_hex(e.verifier_nonce) << "  (freshness)\n"
     << "  key-exchange key   " << tee::to_hex(e.kx_public_key)
     << "  (ephemeral X25519, bound by the signature)\n"
     << "  signature          " << tee::to_hex(e.signature) << "\n"
     << "  signature check    " << (signature_ok ? "valid" : "INVALID") << "\n";
  return os.str();
}

}  // namespace tt::comm
