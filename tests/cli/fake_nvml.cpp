// A STAND-IN FOR NVIDIA's NVML (libnvidia-ml.so.1), for tests only: it signs nothing and attests nothing.
// Built as libnvidia-ml.so.1 in its own folder, it is what `gather-evidence --source gpu` loads when
// that folder is on LD_LIBRARY_PATH, so the GPU path (dlopen, the entry points, the SDK's JSON, the
// nonce check) runs on a machine without NVIDIA's driver. It serves one GPU whose report and
// certificate chain are the files TT_FAKE_NVML_REPORT (binary SPDM report) and TT_FAKE_NVML_CHAIN
// (PEM) name, whatever nonce is asked for (as a replaying attacker would); TT_FAKE_NVML_CC=off says
// confidential computing is off. Its structures are nvml_abi.h's, so it checks our plumbing, not our
// copy of nvml.h (that needs a real driver: docs/reference/gather-evidence.md).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tee/evidence/nvml_abi.h"

namespace nvml = tt::tee::evidence::nvml;

namespace {

constexpr nvml::Return kNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED

std::vector<char> file_named_by(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr) return {};
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" {

nvml::Return nvmlInit_v2() {
  return nvml::kSuccess;
}
nvml::Return nvmlShutdown() {
  return nvml::kSuccess;
}
const char* nvmlErrorString(nvml::Return r) {
  return r == kNotSupported ? "Not Supported" : "Unknown Error";
}
nvml::Return nvmlSystemGetConfComputeState(nvml::ConfComputeSystemState* state) {
  const char* cc = std::getenv("TT_FAKE_NVML_CC");
  state->ccFeature = cc != nullptr && std::strcmp(cc, "off") == 0 ? 0 : nvml::kCcFeatureEnabled;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 1;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml::Device* device) {
  *device = reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(index + 1));
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetArchitecture(nvml::Device, unsigned int* arch) {
  *arch = nvml::kArchHopper;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetConfComputeGpuAttestationReport(nvml::Device,
                                                          nvml::ConfComputeGpuAttestationReport* r) {
  const std::vector<char> report = file_named_by("TT_FAKE_NVML_REPORT");
  if (report.empty() || report.size() > sizeof r->attestationReport) return kNotSupported;
  std::copy(report.begin(), report.end(), r->attestationReport);
  r->attestationReportSize = static_cast<unsigned int>(report.size());
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetConfComputeGpuCertificate(nvml::Device, nvml::ConfComputeGpuCertificate* c) {
  const std::vector<char> chain = file_named_by("TT_FAKE_NVML_CHAIN");
  if (chain.empty() || chain.size() > sizeof c->attestationCertChain) return kNotSupported;
  std::copy(chain.begin(), chain.end(), c->attestationCertChain);
  c->attestationCertChainSize = static_cast<unsigned int>(chain.size());
  return nvml::kSuccess;
}

}  // extern "C"
