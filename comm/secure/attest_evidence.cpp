#include "comm/secure/attest_evidence.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/regular_file.h"

namespace tt::comm {

namespace {
constexpr std::uint64_t kMaxPolicyBytes = std::uint64_t{1} << 20;  // a policy is a few lines
}  // namespace

const char* attestation_mode_name(AttestationMode m) {
  switch (m) {
    case AttestationMode::Certified:
      return "certified";
    case AttestationMode::None:
      return "none";
    case AttestationMode::Real:
      return "real";
  }
  return "?";
}

tee::Measurements expected_measurement(const AttestConfig& config) {
  return tee::measure(config.binary, config.run_config);  // InputError for an unreadable binary
}

tee::VerifierPolicy effective_policy(const AttestConfig& config, const tee::Measurements& own) {
  tee::VerifierPolicy p = config.policy;
  if (p.binaries.empty()) p.binaries.push_back(own.binary);
  if (p.configs.empty()) p.configs.push_back(own.config);
  return p;
}

const tee::Ed25519KeyPair& signing_key(const AttestConfig& config,
                                       std::optional<tee::Ed25519KeyPair>& fresh) {
  if (config.identity) return config.identity->key;
  if (config.mode == AttestationMode::Certified)
    throw InputError("certified attestation needs a device identity (--device-identity)");
  fresh.emplace(tee::Ed25519KeyPair::generate());
  return *fresh;
}

tee::VerifierPolicy load_policy(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> text = tee::read_regular_file(path, "policy", kMaxPolicyBytes);
  std::istringstream in(std::string(text.begin(), text.end()));
  tee::VerifierPolicy policy;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string kind, hex, extra;
    if (!(words >> kind)) continue;
    std::vector<std::uint8_t> raw;
    if (words >> hex) {
      try {
        raw = tee::from_hex(hex);
      } catch (const std::invalid_argument&) {
      }
    }
    if ((kind != "binary" && kind != "config") || raw.size() != 32 || (words >> extra))
      throw InputError("policy '" + path.string() + "' line " + std::to_string(number) +
                       ": expected 'binary <64 hex digits>' or 'config <64 hex digits>'");
    tee::Sha256Digest d{};
    std::copy(raw.begin(), raw.end(), d.begin());
    (kind == "binary" ? policy.binaries : policy.configs).push_back(d);
  }
  if (policy.binaries.empty() && policy.configs.empty())
    throw InputError("policy '" + path.string() + "': no reference measurement in it");
  return policy;
}

std::string policy_text(const tee::Measurements& m) {
  return "# teetrain verifier policy: reference measurements a peer's evidence must match.\n"
         "# A kind with no line accepts only what the verifier itself runs.\n"
         "binary " +
         tee::to_hex(m.binary) + "\nconfig " + tee::to_hex(m.config) + "\n";
}

std::shared_ptr<const tee::TrustAnchor> load_trust_anchor(const std::filesystem::path& root_pem,
                                                          RevocationCheck revocation, tee::StaleCrl stale) {
  const std::filesystem::path crl = tee::TrustAnchor::crl_beside(root_pem);
  std::error_code ec;
  // Only beside a root that can be read: anything else (missing, a FIFO) is the loader's to name first.
  if (revocation == RevocationCheck::Required && std::filesystem::is_regular_file(root_pem, ec) &&
      !std::filesystem::exists(crl, ec)) {
    const std::string dir = root_pem.parent_path().empty() ? "." : root_pem.parent_path().string();
    throw InputError(
        "--trust-root: no revocation list '" + crl.string() +
        "' beside the root; certified attestation checks revocation: `teetrain provision --out " + dir +
        "` writes it (or copy the vendor's current list there), or pass " +
        "--no-revocation-check to accept revoked devices (flagged in every report)");
  }
  try {
    return std::make_shared<const tee::TrustAnchor>(
        revocation == RevocationCheck::Required ? tee::TrustAnchor::load(root_pem, crl, stale)
                                                : tee::TrustAnchor::load_without_revocation(root_pem));
  } catch (const IntegrityError&) {
    throw;  // a genuine list that is stale: an integrity failure, not a malformed file
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("--trust-root: ") + e.what());
  }
}

std::shared_ptr<const tee::DeviceIdentity> load_identity(const std::filesystem::path& pem) {
  try {
    return std::make_shared<const tee::DeviceIdentity>(tee::DeviceIdentity::load_pem(pem));
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("--device-identity: ") + e.what());
  }
}

tee::Evidence make_local_evidence(const AttestConfig& config, std::uint32_t rank,
                                  const tee::VerifierNonce& nonce) {
  std::optional<tee::Ed25519KeyPair> fresh;
  const tee::Ed25519KeyPair& key = signing_key(config, fresh);
  const auto kx = tee::X25519KeyPair::generate();  // bound in, then forgotten: this evidence agrees no key
  const std::vector<std::uint8_t> cert =
      config.identity ? config.identity->certificate.der() : std::vector<std::uint8_t>{};
  return tee::make_evidence(rank, expected_measurement(config), key, cert, nonce, kx.public_key());
}

tee::VerifyResult verify_evidence(const tee::Evidence& evidence, const AttestConfig& expect,
                                  std::optional<std::uint32_t> rank,
                                  std::optional<tee::VerifierNonce> nonce) {
  const tee::VerifierPolicy policy = effective_policy(expect, expected_measurement(expect));
  tee::EvidenceCheck check;
  check.anchor = expect.anchor.get();
  check.policy = &policy;
  check.nonce = nonce.value_or(evidence.verifier_nonce);
  check.rank = rank;
  return tee::verify(evidence, check);
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
  const tee::RegularFile f = tee::open_regular_file(path, "evidence");
  // One byte more than a valid file may hold, so an over-long file is caught as malformed.
  std::vector<std::uint8_t> bytes(tee::Evidence::kMaxSerializedSize + 1);
  const long long got = tee::pread_full(f.fd.get(), bytes, 0);
  if (got < 0) throw RunError("evidence '" + path.string() + "': read failed");
  bytes.resize(static_cast<std::size_t>(got));
  try {
    return tee::Evidence::deserialize(bytes);
  } catch (const IntegrityError& e) {
    throw IntegrityError("evidence '" + path.string() + "': " + e.what());
  }
}

namespace {

std::string certificate_lines(const tee::Evidence& e) {
  if (e.certificate.empty())
    return "  certificate        none: NO ROOT OF TRUST. The device key below is self-asserted; anyone\n"
           "                     can make such evidence, so it proves nothing about who signed it\n";
  try {
    const tee::Certificate c = tee::Certificate::from_der(e.certificate);
    return "  certificate        " + c.describe() + "\n                     (X.509, " +
           std::to_string(e.certificate.size()) +
           " bytes DER: proves the device key belongs to a device the vendor made, once it chains to the "
           "trusted root)\n";
  } catch (const IntegrityError& err) {
    return std::string("  certificate        UNPARSABLE: ") + err.what() + "\n";
  }
}

}  // namespace

std::string describe(const tee::Evidence& e) {
  const bool signature_ok = tee::ed25519_verify(e.device_public_key, e.signed_bytes(), e.signature);
  std::ostringstream os;
  os << "evidence (teetrain EMULATED attestation v2, " << e.serialize().size() << " bytes)\n"
     << "  rank               " << e.rank << "  (claimed; bound by the signature)\n"
     << "  binary measurement " << tee::to_hex(e.measurement.binary)
     << "\n                     (SHA-256 of the executable: what code runs; `sha256sum` prints the same)\n"
     << "  config measurement " << tee::to_hex(e.measurement.config)
     << "\n                     (SHA-256 of the canonical run configuration: how it was started)\n"
     << "  verifier nonce     " << tee::to_hex(e.verifier_nonce)
     << "\n                     (the verifier's fresh challenge: proves the evidence is live, not replayed)\n"
     << "  key-exchange key   " << tee::to_hex(e.kx_public_key)
     << "\n                     (ephemeral X25519: the link key is agreed with whoever holds its private "
        "half)\n"
     << "  device public key  " << tee::to_hex(e.device_public_key) << "  (Ed25519)\n"
     << certificate_lines(e) << "  signature          " << tee::to_hex(e.signature) << "\n"
     << "  signature check    " << (signature_ok ? "valid" : "INVALID")
     << " (by the device key over every field above)\n";
  return os.str();
}

}  // namespace tt::comm
