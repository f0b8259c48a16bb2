#include "tee/evidence/nvidia_evidence.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

using Json = nlohmann::json;

constexpr const char* kHopper = "HOPPER";
constexpr std::size_t kMaxGpus = 64;

std::string read_text(const std::filesystem::path& path, const std::string& what) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, what, kMaxEvidenceFileBytes);
  return {bytes.begin(), bytes.end()};
}

// The report's structure, parsed; InputError prefixed with where it came from and what to do.
void parse_report(GpuEvidence& ev) {
  try {
    ev.transcript = parse_measurement_transcript(ev.report, kHopperSignatureBytes);
    ev.opaque = parse_opaque_data(ev.transcript.response.opaque);
  } catch (const InputError& e) {
    throw InputError(ev.source + ": " + e.what() +
                     "; give the attestation report exactly as the GPU's driver returned it");
  }
}

SpdmNonce nonce_from_hex(const std::string& hex, const std::string& what) {
  std::vector<std::uint8_t> raw;
  try {
    raw = from_hex(hex);
  } catch (const std::invalid_argument&) {
  }
  if (raw.size() != kSpdmNonceBytes) throw InputError(what + ": \"nonce\" is not 64 hex digits");
  SpdmNonce n{};
  std::copy(raw.begin(), raw.end(), n.begin());
  return n;
}

std::string string_field(const Json& gpu, const char* key, const std::string& what) {
  const auto it = gpu.find(key);
  if (it == gpu.end() || !it->is_string())
    throw InputError(what + ": no \"" + key +
                     "\" string (the SDK's evidence has arch, nonce, evidence, certificate)");
  return it->get<std::string>();
}

GpuEvidence gpu_from_json(const Json& gpu, const std::string& what) {
  if (!gpu.is_object()) throw InputError(what + ": not a JSON object");
  GpuEvidence ev;
  ev.source = what;
  ev.arch = string_field(gpu, "arch", what);
  if (ev.arch != kHopper)
    throw InputError(what + ": \"arch\" is \"" + ev.arch.substr(0, 32) +
                     "\"; this verifier reads HOPPER evidence");
  ev.stated_nonce = nonce_from_hex(string_field(gpu, "nonce", what), what);
  ev.report = decode_base64(string_field(gpu, "evidence", what), what + ": \"evidence\"");
  const std::vector<std::uint8_t> pem =
      decode_base64(string_field(gpu, "certificate", what), what + ": \"certificate\"");
  ev.chain = certificates_from_pem(std::string_view(reinterpret_cast<const char*>(pem.data()), pem.size()),
                                   what + ": \"certificate\"");
  parse_report(ev);
  return ev;
}

}  // namespace

std::vector<std::uint8_t> decode_base64(std::string_view text, const std::string& what) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) == 0) compact += c;
  const auto valid = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '/';
  };
  const std::size_t pad = compact.size() - std::min(compact.size(), compact.find_last_not_of('=') + 1);
  const bool ok = compact.size() % 4 == 0 && pad <= 2 &&
                  std::all_of(compact.begin(), compact.end() - static_cast<std::ptrdiff_t>(pad), valid);
  if (!ok || compact.empty()) throw InputError(what + ": not base64 (RFC 4648 with padding)");
  std::vector<std::uint8_t> out(compact.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) throw InputError(what + ": not base64");
  out.resize(out.size() - pad);  // EVP_DecodeBlock counts the padding as zero bytes
  return out;
}

std::string encode_base64(ByteView bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string write_sdk_evidence_json(const std::vector<SdkEvidenceEntry>& gpus) {
  Json doc = Json::array();
  for (const SdkEvidenceEntry& g : gpus)
    doc.push_back({{"arch", g.arch},
                   {"nonce", to_hex(g.nonce)},
                   {"evidence", encode_base64(g.report)},
                   {"certificate", encode_base64(bytes_of(g.certificate_pem))}});
  return doc.dump(2) + "\n";
}

bool looks_like_json(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '[' || text[first] == '{');
}

std::vector<GpuEvidence> parse_sdk_evidence_json(std::string_view json, const std::string& where) {
  Json doc = parse_untrusted_json(json);
  if (doc.is_discarded())
    throw InputError(where +
                     ": not valid JSON (expected the attestation SDK's serialized evidence), or nested deeper "
                     "than 64 levels");
  if (doc.is_object()) doc = Json::array({doc});
  if (!doc.is_array() || doc.empty() || doc.size() > kMaxGpus)
    throw InputError(where + ": expected a list of 1 to " + std::to_string(kMaxGpus) +
                     " GPU evidence objects");
  std::vector<GpuEvidence> gpus;
  for (std::size_t i = 0; i < doc.size(); ++i)
    gpus.push_back(gpu_from_json(doc[i], where + ", GPU " + std::to_string(i)));
  return gpus;
}

std::vector<GpuEvidence> load_sdk_evidence_json(const std::filesystem::path& path) {
  return parse_sdk_evidence_json(read_text(path, "evidence"), printable_path(path));
}

GpuEvidence parse_report_pair(std::string_view report_hex, std::string_view chain_pem,
                              const std::string& where) {
  GpuEvidence ev;
  ev.source = where;
  ev.arch = kHopper;
  std::string hex(report_hex);
  hex.erase(std::remove_if(hex.begin(), hex.end(),
                           [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
            hex.end());
  try {
    ev.report = from_hex(hex);
  } catch (const std::invalid_argument&) {
    throw InputError(where + ": not a hex attestation report (nor the SDK's JSON evidence)");
  }
  ev.chain = certificates_from_pem(chain_pem, where + ": --cert-chain");
  parse_report(ev);
  return ev;
}

GpuEvidence load_report_pair(const std::filesystem::path& report, const std::filesystem::path& chain) {
  return parse_report_pair(read_text(report, "evidence"), read_text(chain, "--cert-chain"),
                           printable_path(report));
}

}  // namespace tt::tee::evidence
