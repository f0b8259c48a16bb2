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

}  // namespace tt::tee::evidence
