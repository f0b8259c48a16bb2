// NVIDIA's, Intel's and AMD's public roots of trust, compiled in from tee/evidence/roots/ (its README gives
// their source and fingerprints), so verification needs no file and no network.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tee/evidence/nvidia_verify.h"
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

// Note [Test roots]: the roots a verification trusts are a parameter, so that evidence signed by
// tests/support/test_vendor (labelled roots: "teetrain TEST ... root - not a vendor" in every subject)
// runs through the unchanged checks of real evidence. A set loaded from a directory is marked `test`,
// and whoever verifies under it appends check_roots: evidence under a test root is refused unless the
// verifier allowed test roots explicitly (`--allow-test-roots`), and every verdict then says TEST ROOTS.
struct EvidenceRoots {
  Certificate intel_sgx_root;      // PCK chains of TDX quotes
  std::vector<AmdRoot> amd_roots;  // VCEK chains of SEV-SNP reports
  Certificate nvidia_device_root;  // GPU device certificates
  Certificate nvidia_rim_root;     // RIM signatures
  bool test = false;               // loaded by load_test_roots: never a vendor's
};
EvidenceRoots bundled_roots();  // the vendors' roots above, compiled in

// File names of a test root directory (what tt_test_vendor writes; tests/support/test_vendor/README.md).
inline constexpr const char* kTestIntelRoot = "intel_sgx_root.pem";
inline constexpr const char* kTestAmdArk = "amd_ark.pem";
inline constexpr const char* kTestAmdAsk = "amd_ask.pem";
inline constexpr const char* kTestNvidiaDeviceRoot = "nvidia_device_root.pem";
inline constexpr const char* kTestNvidiaRimRoot = "nvidia_rim_root.pem";
// The label every subject of a test root carries; a directory whose roots lack it is refused (exit 2).
inline constexpr const char* kTestRootLabel = "teetrain TEST";
EvidenceRoots load_test_roots(const std::filesystem::path& dir);

// Whether evidence verified under test roots may be accepted.
enum class TestRoots { Refuse, Allow };
// The "trust roots" check (Note [Test roots]): ok under the vendors' roots, or under test roots when
// allowed (saying TEST ROOTS); failed, naming the test root, otherwise.
CheckOutcome check_roots(const EvidenceRoots& roots, TestRoots allowed);

}  // namespace tt::tee::evidence
