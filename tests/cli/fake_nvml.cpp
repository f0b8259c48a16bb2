// A STAND-IN FOR NVIDIA's NVML (libnvidia-ml.so.1), for tests only: it attests nothing.
// Built as libnvidia-ml.so.1 in its own folder, it is what `gather-evidence --source gpu` loads when
// that folder is on LD_LIBRARY_PATH, so the GPU path (dlopen, the entry points, the SDK's JSON, the
// nonce check) runs on a machine without NVIDIA's driver. It serves one GPU whose report and
// certificate chain are the files TT_FAKE_NVML_REPORT (binary SPDM report) and TT_FAKE_NVML_CHAIN
// (PEM) name, whatever nonce is asked for (as a replaying attacker would); or, with
// TT_FAKE_NVML_VENDOR (tt_test_vendor's path) and TT_FAKE_NVML_VENDOR_DIR (its test roots), a report
// the test vendor signs over the nonce asked for, written to those two files first (Note [Test roots]
// in tee/evidence/bundled_roots.h). TT_FAKE_NVML_CC=off says confidential computing is off. Its
// structures are nvml_abi.h's, so it checks our plumbing, not our copy of nvml.h (that needs a real
// driver: docs/reference/gather-evidence.md).
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

// With TT_FAKE_NVML_VENDOR: the test vendor signs a report over `nonce` into TT_FAKE_NVML_REPORT and
// TT_FAKE_NVML_CHAIN; false when it fails (or is not asked for).
bool vendor_signs(const unsigned char* nonce) {
  const char* vendor = std::getenv("TT_FAKE_NVML_VENDOR");
  const char* dir = std::getenv("TT_FAKE_NVML_VENDOR_DIR");
  const char* report = std::getenv("TT_FAKE_NVML_REPORT");
  const char* chain = std::getenv("TT_FAKE_NVML_CHAIN");
  if (vendor == nullptr || dir == nullptr || report == nullptr || chain == nullptr) return false;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < 32; ++i) {
    hex += kHex[nonce[i] >> 4];
    hex += kHex[nonce[i] & 15];
  }
  std::string command = std::string("'") + vendor + "' gpu-report --dir '" + dir + "' --nonce " + hex +
                        " --out '" + report + "' --chain-out '" + chain + "'";
  // TT_FAKE_NVML_VENDOR_ARGS: more arguments for the vendor (a measurement block off the RIMs).
  const char* more = std::getenv("TT_FAKE_NVML_VENDOR_ARGS");
  if (more != nullptr) command += std::string(" ") + more;
  return std::system(command.c_str()) == 0;
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
  if (std::getenv("TT_FAKE_NVML_VENDOR") != nullptr && !vendor_signs(r->nonce)) return kNotSupported;
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
