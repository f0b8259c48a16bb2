#include "tee/evidence/bundled_roots.h"

#include "base/error.h"
#include "tee/evidence/bundled_roots_pem.h"
#include "tee/regular_file.h"

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

EvidenceRoots bundled_roots() {
  return {intel_sgx_root(), amd_roots(), nvidia_device_root(), nvidia_rim_root(), false};
}

namespace {

// One labelled root of a test root directory; InputError naming the file when absent or unlabelled.
Certificate test_root(const std::filesystem::path& dir, const char* name) {
  const std::filesystem::path path = dir / name;
  if (!std::filesystem::is_regular_file(path))
    throw InputError("--test-roots '" + printable_path(dir) + "': no " + name +
                     " (make the test roots with tt_test_vendor roots --dir DIR)");
  Certificate root = Certificate::load_pem(path);
  if (root.subject().find(kTestRootLabel) == std::string::npos)
    throw InputError("--test-roots: '" + printable_path(path) + "' is not a test root (its subject " +
                     root.subject() + " lacks \"" + kTestRootLabel + "\"); vendors' roots are bundled");
  return root;
}

}  // namespace

EvidenceRoots load_test_roots(const std::filesystem::path& dir) {
  return {test_root(dir, kTestIntelRoot),
          {{"TEST", test_root(dir, kTestAmdArk), test_root(dir, kTestAmdAsk)}},
          test_root(dir, kTestNvidiaDeviceRoot),
          test_root(dir, kTestNvidiaRimRoot),
          true};
}

CheckOutcome check_roots(const EvidenceRoots& roots, TestRoots allowed) {
  if (!roots.test) return {Check::TrustRoots, true, "the vendors' roots (bundled)"};
  if (allowed == TestRoots::Allow)
    return {Check::TrustRoots, true,
            "TEST ROOTS (" + roots.intel_sgx_root.subject() +
                ", ...): allowed by --allow-test-roots; no vendor vouches for this evidence"};
  return {Check::TrustRoots, false,
          "the evidence verifies only under a test root (" + roots.intel_sgx_root.subject() +
              ", ...), not a vendor's: refused without --allow-test-roots"};
}

}  // namespace tt::tee::evidence
