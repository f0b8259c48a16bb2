#include "tee/evidence/gather.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "tee/evidence/nvml_gather.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tsm_report.h"

namespace tt::tee::evidence {
namespace {

struct SourceName {
  EvidenceSource source;
  const char* name;
};
constexpr std::array kSourceNames{
    SourceName{EvidenceSource::Tdx, "tdx"}, SourceName{EvidenceSource::Snp, "snp"},
    SourceName{EvidenceSource::Gpu, "gpu"}, SourceName{EvidenceSource::Auto, "auto"}};

// configfs-tsm's providers (the `provider` attribute) and where each one's REPORTDATA lies.
struct Provider {
  const char* name;
  EvidenceSource source;
  const char* what;
};
constexpr std::array kProviders{
    Provider{"tdx_guest", EvidenceSource::Tdx, "an Intel TDX quote"},
    Provider{"sev_guest", EvidenceSource::Snp, "an AMD SEV-SNP attestation report"}};

// SEV-SNP firmware ABI, ATTESTATION_REPORT: REPORT_DATA, 64 bytes at offset 0x50.
constexpr std::size_t kSnpReportDataOffset = 0x50;

const Provider* find_provider(const std::string& name) {
  const auto* it =
      std::find_if(kProviders.begin(), kProviders.end(), [&](const Provider& p) { return name == p.name; });
  return it == kProviders.end() ? nullptr : it;
}

[[noreturn]] void refuse_report_data(const std::string& what, ByteView found, const ReportData& asked) {
  throw IntegrityError("configfs-tsm: " + what + "'s REPORTDATA " + to_hex(found) + " is not the " +
                       to_hex(asked) + " written: the report answers another request; nothing saved");
}

// What the kernel returned must answer our REPORTDATA (a stale report, or another writer's, does not).
void check_report_data(const Provider& p, const TsmReport& r, const ReportData& asked,
                       std::vector<std::string>& notes) {
  if (p.source == EvidenceSource::Tdx) {
    if (!looks_like_tdx_quote(r.outblob)) {
      notes.push_back("the quote is not a TDX v4 quote: its REPORTDATA was not checked here");
      return;
    }
    TdxQuote q;
    try {
      q = parse_tdx_quote(r.outblob, "the kernel's TDX quote");
    } catch (const InputError& e) {
      throw RunError(std::string("configfs-tsm: ") + e.what());
    }
    if (!equal_ct(q.report_data(), asked)) refuse_report_data(p.what, q.report_data(), asked);
    return;
  }
  if (r.outblob.size() < kSnpReportDataOffset + kReportDataBytes)
    throw RunError("configfs-tsm: the SEV-SNP report is " + std::to_string(r.outblob.size()) +
                   " bytes, too short for its REPORT_DATA");
  const ByteView found = ByteView(r.outblob).subspan(kSnpReportDataOffset, kReportDataBytes);
  if (!equal_ct(found, asked)) refuse_report_data(p.what, found, asked);
}

GatheredEvidence gather_cpu(const GatherRequest& req) {
  const Provider* provider = nullptr;
  TsmReport r = request_tsm_report(req.tsm_dir, req.report_data, req.timeout, [&](const std::string& name) {
    provider = find_provider(name);
    if (provider == nullptr)
      throw InputError("configfs-tsm provider '" + name.substr(0, 64) +
                       "' is neither tdx_guest nor sev_guest, the two gather-evidence reads");
    if (req.source != EvidenceSource::Auto && provider->source != req.source)
      throw InputError(std::string("--source ") + source_name(req.source) +
                       ": this guest's configfs-tsm provider is " + name + ", " + provider->what +
                       "; give --source " + source_name(provider->source) + " or auto");
  });
  GatheredEvidence g;
  check_report_data(*provider, r, req.report_data, g.notes);
  g.source = provider->source;
  g.origin = "configfs-tsm provider " + r.provider + " (entry " + r.entry.string() + ")";
  g.what = provider->what;
  g.evidence = std::move(r.outblob);
  g.certificates = std::move(r.auxblob);
  g.notes.insert(g.notes.end(), r.notes.begin(), r.notes.end());
  return g;
}

// A GPU signs 32 bytes: the challenge, which must then be all of the request's REPORTDATA.
SpdmNonce gpu_nonce(const ReportData& rd) {
  if (std::any_of(rd.begin() + kSpdmNonceBytes, rd.end(), [](auto b) { return b != 0; }))
    throw InputError(
        "--nonce: a GPU signs a 32-byte challenge (64 hex digits); 128 digits are for a CPU TEE's "
        "REPORTDATA");
  SpdmNonce nonce{};
  std::copy_n(rd.begin(), kSpdmNonceBytes, nonce.begin());
  return nonce;
}

GatheredEvidence gather_gpu(NvmlSession& nvml, const GatherRequest& req) {
  const std::vector<SdkEvidenceEntry> gpus = nvml.gather(gpu_nonce(req.report_data));
  GatheredEvidence g;
  g.source = EvidenceSource::Gpu;
  g.origin = "NVML, " + std::to_string(gpus.size()) + " GPU(s)";
  g.what = "NVIDIA GPU evidence (the attestation SDK's JSON)";
  const std::string json = write_sdk_evidence_json(gpus);
  g.evidence.assign(json.begin(), json.end());
  return g;
}

[[noreturn]] void absent(const std::string& what) {
  throw InputError(what + "; nothing gathered. " + no_hardware_advice());
}

}  // namespace

const char* source_name(EvidenceSource s) {
  for (const SourceName& n : kSourceNames)
    if (n.source == s) return n.name;
  return "?";
}

std::optional<EvidenceSource> source_from_name(std::string_view name) {
  for (const SourceName& n : kSourceNames)
    if (name == n.name) return n.source;
  return std::nullopt;
}

std::string no_hardware_advice() {
  return "Without this hardware, verify the published samples instead (teetrain verify-evidence "
         "tests/fixtures/evidence/...: docs/reference/verify-evidence.md); training keeps the emulated "
         "vendor "
         "(teetrain provision)";
}

GatheredEvidence gather_evidence(const GatherRequest& req) {
  const std::optional<std::string> no_tsm = tsm_absence(req.tsm_dir);
  const bool cpu = req.source == EvidenceSource::Tdx || req.source == EvidenceSource::Snp;
  if (cpu && no_tsm) absent(std::string("--source ") + source_name(req.source) + ": " + *no_tsm);
  if (cpu || (req.source == EvidenceSource::Auto && !no_tsm)) return gather_cpu(req);
  if (req.source == EvidenceSource::Gpu) gpu_nonce(req.report_data);  // refused before any driver is asked
  std::string no_gpu;
  const std::unique_ptr<NvmlSession> nvml = NvmlSession::open(kNvmlLibrary, no_gpu);
  if (nvml) return gather_gpu(*nvml, req);
  if (req.source == EvidenceSource::Gpu) absent("--source gpu: " + no_gpu);
  absent("no attestation source on this machine: " + *no_tsm + "; " + no_gpu);
}

}  // namespace tt::tee::evidence
