// NVIDIA's, Intel's and AMD's public roots of trust, compiled in from tee/evidence/roots/ (its README gives
// their source and fingerprints), so verification needs no file and no network.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tee/identity/x509.h"

namespace tt::tee::evidence {

Certificate nvidia_device_root();  // CN=NVIDIA Device Identity CA: GPU device certificates
Certificate nvidia_rim_root();     // CN=NVIDIA CoRIM signing Root CA: reference integrity manifests
Certificate intel_sgx_root();      // CN=Intel SGX Root CA: PCK certificates of TDX quotes

// AMD's SEV-SNP hierarchy of one processor family: the ARK (AMD root key, self-signed) signed the ASK
// (AMD SEV key), which signs every chip's VCEK; both with RSA-PSS over SHA-384.
struct AmdRoot {
  std::string family;              // "Milan", "Genoa"; "--device-root" for a root the user gave
  Certificate ark;                 // trusted
  std::optional<Certificate> ask;  // only helps build the path: never trusted on its own
};
std::vector<AmdRoot> amd_roots();  // Milan, Genoa

}  // namespace tt::tee::evidence
