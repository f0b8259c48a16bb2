#include "tee/evidence/bundled_roots.h"

#include "tee/evidence/bundled_roots_pem.h"

namespace tt::tee::evidence {

Certificate nvidia_device_root() {
  return certificates_from_pem(pem::kNvidiaDeviceRoot, "bundled NVIDIA device root").front();
}

Certificate nvidia_rim_root() {
  return certificates_from_pem(pem::kNvidiaRimRoot, "bundled NVIDIA RIM root").front();
}

Certificate intel_sgx_root() {
  return certificates_from_pem(pem::kIntelSgxRoot, "bundled Intel SGX root").front();
}

std::vector<AmdRoot> amd_roots() {
  auto one = [](const char* pem, const char* what) { return certificates_from_pem(pem, what).front(); };
  return {{"Milan", one(pem::kAmdMilanArk, "bundled AMD ARK-Milan"),
           one(pem::kAmdMilanAsk, "bundled AMD SEV-Milan")},
          {"Genoa", one(pem::kAmdGenoaArk, "bundled AMD ARK-Genoa"),
           one(pem::kAmdGenoaAsk, "bundled AMD SEV-Genoa")}};
}

}  // namespace tt::tee::evidence
