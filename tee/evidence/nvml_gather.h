// NVIDIA GPU attestation evidence gathered through NVML at run time (tee/evidence/nvml_abi.h): for
// every GPU, the SPDM measurement report answering a 32-byte challenge and the certificate chain
// that signs it, in the attestation SDK's evidence form that verify-evidence reads.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_evidence.h"

namespace tt::tee::evidence {

class NvmlSession {
 public:
  // Loads `library` and starts NVML; nullptr, with `why_not` in words, when there is no NVIDIA
  // driver, it does not start, or confidential computing is off.
  static std::unique_ptr<NvmlSession> open(const std::string& library, std::string& why_not);
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // Every GPU's report for `nonce`; a Hopper report must carry it in its signed request
  // (IntegrityError otherwise). RunError when NVML fails.
  std::vector<SdkEvidenceEntry> gather(const SpdmNonce& nonce);

  struct Api;
  struct Library;
  // Only open() can make its arguments (the types are defined in nvml_gather.cpp).
  NvmlSession(std::unique_ptr<Library> lib, std::unique_ptr<Api> api);

 private:
  std::unique_ptr<Library> lib_;
  std::unique_ptr<Api> api_;
};

}  // namespace tt::tee::evidence
