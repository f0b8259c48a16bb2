// NVIDIA's and Intel's public roots of trust, compiled in from tee/evidence/roots/ (its README gives their
// source and fingerprints), so verification needs no file and no network.
#pragma once
#include "tee/x509.h"

namespace tt::tee::evidence {

Certificate nvidia_device_root();  // CN=NVIDIA Device Identity CA: GPU device certificates
Certificate nvidia_rim_root();     // CN=NVIDIA CoRIM signing Root CA: reference integrity manifests
Certificate intel_sgx_root();      // CN=Intel SGX Root CA: PCK certificates of TDX quotes

}  // namespace tt::tee::evidence
