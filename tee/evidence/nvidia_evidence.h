// NVIDIA GPU attestation evidence as NVIDIA's tools save it, read for offline verification
// (tee/evidence/nvidia_verify.h). Two formats:
//
//   the attestation SDK's serialized evidence (JSON): a list with one object per GPU,
//     {"arch": "HOPPER", "nonce": HEX, "evidence": BASE64, "certificate": BASE64}
//     where "evidence" is the SPDM attestation report and "certificate" the GPU's PEM certificate
//     chain (leaf first), and "nonce" repeats the challenge the report answers (NOT signed: the
//     signed copy is inside the report's GET_MEASUREMENTS request);
//   the local verifier's pair of files: the report in hex (one line) and the PEM chain beside it.
//
// Everything read here is untrusted: these functions check the structure (JSON, base64, PEM, the SPDM
// messages, the opaque data) and throw InputError naming what is malformed and what to do; whether
// the evidence is genuine is nvidia_verify.h's question.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/evidence/nvidia_opaque.h"
#include "tee/evidence/spdm.h"
#include "tee/identity/x509.h"

namespace tt::tee::evidence {

// The signature that ends a Hopper report: ECDSA P-384, r || s.
inline constexpr std::size_t kHopperSignatureBytes = 96;
// Far above a genuine file (a Hopper report is ~4 KiB, a JSON file for 8 GPUs ~100 KiB).
inline constexpr std::uint64_t kMaxEvidenceFileBytes = std::uint64_t{4} << 20;

struct GpuEvidence {
  std::string source;                     // where it came from, for messages: "FILE, GPU 0"
  std::string arch;                       // "HOPPER"
  std::vector<Certificate> chain;         // as the GPU sent it, leaf first
  std::vector<std::uint8_t> report;       // GET_MEASUREMENTS request || MEASUREMENTS response (signed)
  std::optional<SpdmNonce> stated_nonce;  // the file's own "nonce" field, when it has one (unsigned)
  MeasurementTranscript transcript;
  std::vector<OpaqueField> opaque;
};

// The SDK's JSON, as text (`where` names it in errors) or from a file.
std::vector<GpuEvidence> parse_sdk_evidence_json(std::string_view json, const std::string& where);
std::vector<GpuEvidence> load_sdk_evidence_json(const std::filesystem::path& path);

// The local verifier's report (hex text) and certificate chain (PEM text).
GpuEvidence parse_report_pair(std::string_view report_hex, std::string_view chain_pem,
                              const std::string& where);
GpuEvidence load_report_pair(const std::filesystem::path& report, const std::filesystem::path& chain);

// Whether a file's text looks like the SDK's JSON (its first non-blank character opens a list or an
// object) rather than a hex report.
bool looks_like_json(std::string_view text);

// One GPU's evidence as the SDK serializes it (what `gather-evidence --source gpu` writes).
struct SdkEvidenceEntry {
  std::string arch;                  // "HOPPER", "BLACKWELL"
  SpdmNonce nonce{};                 // the challenge asked for
  std::vector<std::uint8_t> report;  // the SPDM report, as the driver returned it
  std::string certificate_pem;       // the chain that signs it, leaf first, as the driver returned it
};

// The SDK's JSON for these GPUs: a list of {arch, nonce (hex), evidence (base64), certificate (base64)},
// which parse_sdk_evidence_json reads back.
std::string write_sdk_evidence_json(const std::vector<SdkEvidenceEntry>& gpus);

// Standard base64 (RFC 4648, with padding).
std::string encode_base64(ByteView bytes);

// Decodes standard base64 (RFC 4648, padding required, whitespace between groups ignored); throws
// InputError("<what>: not base64 ...") otherwise.
std::vector<std::uint8_t> decode_base64(std::string_view text, const std::string& what);

}  // namespace tt::tee::evidence
