#include "engine/keys/real_attestation.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/hex.h"
#include "engine/keys/tee_session.h"
#include "tee/bytes.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/gather.h"
#include "tee/evidence/nvidia_verify.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tsm_report.h"
#include "tee/identity/kx_binding.h"
#include "tee/regular_file.h"

namespace tt {

namespace ev = tee::evidence;

namespace {

// TD quote body offsets (tee/evidence/tdx_quote.h): TDATTRIBUTES, MRTD, RTMR0..3.
constexpr std::size_t kTdAttributesAt = 120;
constexpr std::size_t kMrtdAt = 136;
constexpr std::size_t kRtmr0At = 328;
constexpr std::size_t kMeasurementBytes = 48;
constexpr std::uint8_t kTdDebugBit = 0x01;  // TDATTRIBUTES bit 0: the TD may be debugged by the host

std::string hex16(tee::ByteView b) {
  return short_hex(tee::to_hex(b), 16);
}

comm::RealVerdict refuse(std::string reason) {
  return {.ok = false, .reason = std::move(reason), .measurements = ""};
}

// The first failed vendor check, as the refusal (verify-evidence's words); nullopt when all passed.
std::optional<std::string> first_failure(const std::string& what,
                                         const std::vector<ev::CheckOutcome>& checks) {
  for (const ev::CheckOutcome& c : checks)
    if (!c.ok) return what + ": " + ev::check_name(c.check) + " check failed: " + c.detail;
  return std::nullopt;
}

std::string key_substituted(const char* field) {
  return std::string("key substituted: the evidence's ") + field +
         " is not kx_challenge(our nonce, rank, the key received beside it): the key was replaced, or "
         "the evidence answers another challenge";
}

comm::RealVerdict verify_tdx(const tee::ByteView cpu, const tee::ReportData& expected) {
  ev::TdxQuote quote;
  try {
    quote = ev::parse_tdx_quote(cpu, "the TDX quote");
  } catch (const std::exception& e) {
    return refuse(std::string("malformed evidence: ") + e.what());
  }
  if (!std::equal(expected.begin(), expected.end(), quote.report_data().begin()))
    return refuse(key_substituted("REPORTDATA"));
  const ev::TdxTrust trust{ev::intel_sgx_root(), {}, expected, std::nullopt};
  if (const auto failed = first_failure("Intel TDX quote", ev::verify_tdx_quote(quote, trust)))
    return refuse(*failed);
  const tee::ByteView body = quote.body();
  if ((body[kTdAttributesAt] & kTdDebugBit) != 0)
    return refuse(
        "debug TD: the quote's TD attributes allow debugging (the host may read and change the TD)");
  std::string m = "MRTD " + hex16(body.subspan(kMrtdAt, kMeasurementBytes));
  for (std::size_t i = 0; i < 4; ++i)
    m += ", RTMR" + std::to_string(i) + " " +
         hex16(body.subspan(kRtmr0At + i * kMeasurementBytes, kMeasurementBytes));
  return {.ok = true, .reason = "ok", .measurements = m};
}

std::vector<tee::Certificate> vcek_chain(const std::vector<std::uint8_t>& bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.find("-----BEGIN") != std::string_view::npos)
    return tee::certificates_from_pem(text, "the VCEK sent with the report");
  return {tee::Certificate::from_der(bytes)};
}

comm::RealVerdict verify_snp(const comm::RealEvidence& e, const tee::ReportData& expected) {
  ev::SnpReport report;
  std::vector<tee::Certificate> vcek;
  try {
    report = ev::parse_snp_report(e.cpu, "the SEV-SNP report");
    if (e.cpu_certs.empty()) return refuse("malformed evidence: an SEV-SNP report without its VCEK");
    vcek = vcek_chain(e.cpu_certs);
  } catch (const std::exception& ex) {
    return refuse(std::string("malformed evidence: ") + ex.what());
  }
  if (!std::equal(expected.begin(), expected.end(), report.report_data().begin()))
    return refuse(key_substituted("REPORT_DATA"));
  const ev::SnpTrust trust{ev::amd_roots(), {}, expected, std::nullopt};
  if (ev::root_for(trust, vcek.front()) == nullptr)
    return refuse("AMD SEV-SNP report: its VCEK is not issued by a trusted AMD root");
  if (const auto failed = first_failure("AMD SEV-SNP report", ev::verify_snp_report(report, vcek, trust)))
    return refuse(*failed);
  if (report.debug_allowed())
    return refuse("debug guest: the SEV-SNP policy allows debugging (the host may read and change the VM)");
  return {.ok = true,
          .reason = "ok",
          .measurements = "MEASUREMENT " + hex16(report.measurement()) + ", reported TCB " +
                          hex16(report.field(0x180, 8))};
}

comm::RealVerdict verify_gpus(const std::vector<std::uint8_t>& json, const tee::Sha256Digest& challenge) {
  std::vector<ev::GpuEvidence> gpus;
  try {
    gpus = ev::parse_sdk_evidence_json(
        std::string_view(reinterpret_cast<const char*>(json.data()), json.size()), "the GPU evidence");
  } catch (const std::exception& ex) {
    return refuse(std::string("malformed evidence: ") + ex.what());
  }
  if (gpus.empty()) return refuse("malformed evidence: GPU evidence for no GPU");
  const ev::EvidenceTrust trust{ev::nvidia_device_root(), {}, tee::gpu_nonce_of(challenge), std::nullopt};
  for (const ev::GpuEvidence& gpu : gpus)
    if (const auto failed = first_failure("NVIDIA " + gpu.source, ev::verify_gpu_evidence(gpu, trust)))
      return refuse(*failed);
  return {.ok = true, .reason = "ok", .measurements = std::to_string(gpus.size()) + " GPU(s) verified"};
}

class VendorVerifier final : public comm::RealEvidenceVerifier {
 public:
  comm::RealVerdict verify(const comm::RealAttestationKind& kind, const comm::RealEvidence& e,
                           const tee::Sha256Digest& challenge) const override {
    const tee::ReportData expected = tee::report_data_of(challenge);
    comm::RealVerdict v =
        kind.cpu == comm::CpuTee::Tdx ? verify_tdx(e.cpu, expected) : verify_snp(e, expected);
    if (!v || !kind.gpu) return v;
    const comm::RealVerdict g = verify_gpus(e.gpu, challenge);
    if (!g) return g;
    v.measurements += "; " + g.measurements;
    return v;
  }
  std::string describe() const override {
    return "vendor roots (Intel SGX root, AMD Milan/Genoa ARKs, NVIDIA device identity root; bundled); "
           "revocation and TCB collateral NOT checked";
  }
};

class HardwareProver final : public comm::RealEvidenceProver {
 public:
  HardwareProver(std::filesystem::path tsm_dir, std::vector<std::uint8_t> vcek, std::chrono::seconds timeout)
      : tsm_dir_(std::move(tsm_dir)), vcek_(std::move(vcek)), timeout_(timeout) {}

  comm::RealEvidence gather(const comm::RealAttestationKind& kind,
                            const tee::Sha256Digest& challenge) override {
    ev::GatherRequest cpu{
        .source = kind.cpu == comm::CpuTee::Tdx ? ev::EvidenceSource::Tdx : ev::EvidenceSource::Snp,
        .report_data = tee::report_data_of(challenge),
        .tsm_dir = tsm_dir_,
        .timeout = timeout_};
    comm::RealEvidence out{.cpu = ev::gather_evidence(cpu).evidence, .cpu_certs = vcek_, .gpu = {}};
    if (kind.gpu) {
      // Note [GPU nonce from the challenge]: the GPUs sign its 32 bytes; the rest stays zero.
      ev::GatherRequest gpu = cpu;
      gpu.source = ev::EvidenceSource::Gpu;
      gpu.report_data = tee::report_data_of(tee::gpu_nonce_of(challenge));
      out.gpu = ev::gather_evidence(gpu).evidence;
    }
    return out;
  }

 private:
  std::filesystem::path tsm_dir_;
  std::vector<std::uint8_t> vcek_;
  std::chrono::seconds timeout_;
};

}  // namespace

std::shared_ptr<const comm::RealEvidenceVerifier> make_real_verifier() {
  return std::make_shared<const VendorVerifier>();
}

comm::RealAttestation make_real_attestation(const comm::RealAttestationKind& kind,
                                            const RealAttestationOptions& options, int rank) {
  const std::filesystem::path tsm = options.tsm_dir.empty()
                                        ? std::filesystem::path(ev::kDefaultTsmDir)
                                        : std::filesystem::path(expand_rank(options.tsm_dir, rank));
  if (const auto absent = ev::tsm_absence(tsm))
    throw InputError("--attestation " + std::string(kind.name) + ": rank " + std::to_string(rank) + ": " +
                     *absent +
                     "; run on a confidential VM (scripts/check-confidential-vm.sh says what it "
                     "lacks), or keep the emulated vendor (--attestation certified)");
  std::vector<std::uint8_t> vcek;
  if (kind.cpu == comm::CpuTee::Snp) {
    if (options.vcek.empty())
      throw InputError("--attestation " + std::string(kind.name) +
                       " needs this rank's VCEK: --vcek FILE (AMD's key distribution service serves it for "
                       "the chip's CHIP_ID and REPORTED_TCB; docs/confidential-vms.md)");
    vcek = tee::read_regular_file(expand_rank(options.vcek, rank), "--vcek",
                                  comm::RealEvidenceMessage::kMaxCertBytes);
  }
  return {.kind = kind,
          .prover = std::make_shared<HardwareProver>(tsm, std::move(vcek), options.gather_timeout),
          .verifier = make_real_verifier()};
}

}  // namespace tt
