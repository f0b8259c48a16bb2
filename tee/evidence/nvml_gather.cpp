#include "tee/evidence/nvml_gather.h"

#include <dlfcn.h>

#include <algorithm>

#include "base/error.h"
#include "tee/evidence/nvml_abi.h"

namespace tt::tee::evidence {

struct NvmlSession::Library {
  void* handle = nullptr;
  ~Library() {
    if (handle != nullptr) ::dlclose(handle);
  }
};

struct NvmlSession::Api {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::SystemGetConfComputeStateFn cc_state = nullptr;
  nvml::DeviceGetCountFn device_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_handle = nullptr;
  nvml::DeviceGetArchitectureFn architecture = nullptr;
  nvml::DeviceGetConfComputeGpuAttestationReportFn attestation_report = nullptr;
  nvml::DeviceGetConfComputeGpuCertificateFn certificate = nullptr;

  std::string error(nvml::Return r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return (text != nullptr ? std::string(text) : "NVML error") + " (" + std::to_string(r) + ")";
  }
  void check(nvml::Return r, const std::string& call) const {
    if (r != nvml::kSuccess) throw RunError("NVML: " + call + " failed: " + error(r));
  }
};

namespace {

// One entry point by its exported name; records the first one missing.
template <typename Fn>
void resolve(void* handle, const char* name, Fn& slot, std::string& missing) {
  // POSIX guarantees that dlsym's object pointer converts to the function pointer it names.
  slot = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (slot == nullptr && missing.empty()) missing = name;
}

std::string resolve_all(void* h, NvmlSession::Api& a) {
  std::string missing;
  resolve(h, "nvmlInit_v2", a.init, missing);
  resolve(h, "nvmlShutdown", a.shutdown, missing);
  resolve(h, "nvmlErrorString", a.error_string, missing);
  resolve(h, "nvmlSystemGetConfComputeState", a.cc_state, missing);
  resolve(h, "nvmlDeviceGetCount_v2", a.device_count, missing);
  resolve(h, "nvmlDeviceGetHandleByIndex_v2", a.device_handle, missing);
  resolve(h, "nvmlDeviceGetArchitecture", a.architecture, missing);
  resolve(h, "nvmlDeviceGetConfComputeGpuAttestationReport", a.attestation_report, missing);
  resolve(h, "nvmlDeviceGetConfComputeGpuCertificate", a.certificate, missing);
  return missing;
}

std::string arch_name(unsigned int arch) {
  switch (arch) {
    case nvml::kArchHopper:
      return "HOPPER";
    case nvml::kArchBlackwell:
      return "BLACKWELL";
    default:
      return "UNKNOWN";
  }
}

// A Hopper report must answer our challenge in its signed request (the SPDM reader verify-evidence
// uses); other architectures' reports are saved unchecked, and verify-evidence says what it reads.
void check_nonce(const SdkEvidenceEntry& e, unsigned int index) {
  if (e.arch != "HOPPER") return;
  const std::string gpu = "GPU " + std::to_string(index);
  MeasurementTranscript t;
  try {
    t = parse_measurement_transcript(e.report, kHopperSignatureBytes);
  } catch (const InputError& err) {
    throw RunError("NVML: " + gpu + "'s attestation report is malformed: " + err.what());
  }
  if (t.request.nonce != e.nonce)
    throw IntegrityError("NVML: " + gpu + "'s attestation report answers nonce " + to_hex(t.request.nonce) +
                         ", not the challenge " + to_hex(e.nonce) + " asked for");
}

}  // namespace

NvmlSession::NvmlSession(std::unique_ptr<Library> lib, std::unique_ptr<Api> api)
    : lib_(std::move(lib)), api_(std::move(api)) {}

NvmlSession::~NvmlSession() {
  if (api_) api_->shutdown();
}

std::unique_ptr<NvmlSession> NvmlSession::open(const std::string& library, std::string& why_not) {
  auto lib = std::make_unique<Library>();
  lib->handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    why_not = "no " + library + " (no NVIDIA driver on this machine)";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  if (const std::string missing = resolve_all(lib->handle, *api); !missing.empty()) {
    why_not = library + " has no " + missing +
              " (an NVIDIA driver older than R535, without confidential computing)";
    return nullptr;
  }
  if (const nvml::Return r = api->init(); r != nvml::kSuccess) {
    why_not = "NVML did not start: " + api->error(r) + " (is the NVIDIA driver loaded?)";
    return nullptr;
  }
  auto session = std::make_unique<NvmlSession>(std::move(lib), std::move(api));
  nvml::ConfComputeSystemState state{};
  const nvml::Return r = session->api_->cc_state(&state);
  if (r != nvml::kSuccess || state.ccFeature != nvml::kCcFeatureEnabled) {
    why_not = r != nvml::kSuccess
                  ? "NVML cannot tell the confidential computing state: " + session->api_->error(r)
                  : "NVML says confidential computing is off on this machine's GPUs";
    return nullptr;
  }
  return session;
}

std::vector<SdkEvidenceEntry> NvmlSession::gather(const SpdmNonce& nonce) {
  unsigned int count = 0;
  api_->check(api_->device_count(&count), "nvmlDeviceGetCount_v2");
  if (count == 0) throw RunError("NVML: confidential computing is on, but NVML lists no GPU");
  std::vector<SdkEvidenceEntry> out;
  for (unsigned int i = 0; i < count; ++i) {
    const std::string which = " (GPU " + std::to_string(i) + ")";
    nvml::Device device = nullptr;
    api_->check(api_->device_handle(i, &device), "nvmlDeviceGetHandleByIndex_v2" + which);
    unsigned int arch = 0;
    api_->check(api_->architecture(device, &arch), "nvmlDeviceGetArchitecture" + which);
    // ~12 KiB and ~9 KiB: on the heap, zeroed, as nvml.h's callers pass them.
    auto report = std::make_unique<nvml::ConfComputeGpuAttestationReport>();
    std::copy(nonce.begin(), nonce.end(), report->nonce);
    api_->check(api_->attestation_report(device, report.get()),
                "nvmlDeviceGetConfComputeGpuAttestationReport" + which);
    auto cert = std::make_unique<nvml::ConfComputeGpuCertificate>();
    api_->check(api_->certificate(device, cert.get()), "nvmlDeviceGetConfComputeGpuCertificate" + which);
    const std::size_t report_size =
        std::min<std::size_t>(report->attestationReportSize, sizeof report->attestationReport);
    const std::size_t chain_size =
        std::min<std::size_t>(cert->attestationCertChainSize, sizeof cert->attestationCertChain);
    SdkEvidenceEntry e{
        arch_name(arch), nonce,
        std::vector<std::uint8_t>(report->attestationReport, report->attestationReport + report_size),
        std::string(reinterpret_cast<const char*>(cert->attestationCertChain), chain_size)};
    check_nonce(e, i);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tt::tee::evidence
