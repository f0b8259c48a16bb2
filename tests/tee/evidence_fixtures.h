// The real NVIDIA, Intel and AMD samples of tests/fixtures/evidence/ (its README gives their source), read
// for the tee/evidence tests; tests run from the repository root.
#pragma once
#include <fstream>
#include <iterator>
#include <string>

#include "tee/evidence/nvidia_evidence.h"

namespace tt::tee::evidence::test {

inline constexpr const char* kDir = "tests/fixtures/evidence/";
inline constexpr const char* kSdkNonce = "e97b23a1718095a0e9e35edca810768c70a6a5a389b705e753b197912bc11576";
inline constexpr const char* kLocalNonce = "931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb";
inline constexpr const char* kVbiosRim = "g520_0200_885_9600740001_PROD.swidtag";
inline constexpr const char* kOtherVbiosRim = "1010_0200_882_96005E0001_PROD.swidtag";
inline constexpr const char* kTdxSpr = "tdx_prod_quote_SPR_E4.dat";
inline constexpr const char* kTdxCos = "cos-113-tdx-quote.dat";
inline constexpr const char* kSnpGsgReport = "snp_milan_gsg_report.bin";
inline constexpr const char* kSnpGsgVcek = "snp_milan_gsg_vcek.der";
inline constexpr const char* kSnpVirteeReport = "snp_milan_virtee_report.bin";
inline constexpr const char* kSnpVirteeVcek = "snp_milan_virtee_vcek.der";
inline constexpr const char* kSnpTurinVcek = "snp_turin_virtee_vcek.der";
inline constexpr std::int64_t kRimsValid = 1735689600;  // 2025-01-01: both sample RIMs' signers valid

inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(kDir) + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline SpdmNonce nonce(const char* hex) {
  const std::vector<std::uint8_t> raw = from_hex(hex);
  SpdmNonce n{};
  std::copy(raw.begin(), raw.end(), n.begin());
  return n;
}

// Every sample GPU: the SDK's one and four, and the local verifier's pair, with the nonce each answers.
struct Sample {
  GpuEvidence gpu;
  SpdmNonce nonce;
};
inline std::vector<Sample> all_samples() {
  std::vector<Sample> out;
  for (GpuEvidence& g : parse_sdk_evidence_json(fixture("hopper_evidence.json"), "hopper_evidence.json"))
    out.push_back({std::move(g), nonce(kSdkNonce)});
  for (GpuEvidence& g : parse_sdk_evidence_json(fixture("multi_gpu_hopper.json"), "multi_gpu_hopper.json"))
    out.push_back({std::move(g), nonce(kSdkNonce)});
  out.push_back(
      {parse_report_pair(fixture("hopperAttestationReport.txt"), fixture("hopperCertChain.txt"), "local"),
       nonce(kLocalNonce)});
  return out;
}

}  // namespace tt::tee::evidence::test
