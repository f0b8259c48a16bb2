// make_roots (test_vendor.h): the test roots, intermediates, keys and CRLs of a directory.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "tee/evidence/bundled_roots.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence::test_vendor {

// The key files sit beside the certificates: "<name>.key.pem".
const std::array<Authority, 9> kAuthorities = {{
    {kTestIntelRoot, "intel_sgx_root.key.pem", "", "teetrain TEST Intel SGX root - not a vendor",
     KeyKind::P256, SignStyle::Ecdsa},
    {kIntelPckCa, "intel_pck_ca.key.pem", kTestIntelRoot,
     "teetrain TEST Intel PCK platform CA - not a vendor", KeyKind::P256, SignStyle::Ecdsa},
    {kIntelTcbSigning, "intel_tcb_signing.key.pem", kTestIntelRoot,
     "teetrain TEST Intel SGX TCB signing - not a vendor", KeyKind::P256, SignStyle::Ecdsa},
    {kTestAmdArk, "amd_ark.key.pem", "", "teetrain TEST AMD ARK root - not a vendor", KeyKind::Rsa,
     SignStyle::RsaPss},
    {kTestAmdAsk, "amd_ask.key.pem", kTestAmdArk, "teetrain TEST AMD SEV ASK - not a vendor", KeyKind::Rsa,
     SignStyle::RsaPss},
    {kTestNvidiaDeviceRoot, "nvidia_device_root.key.pem", "",
     "teetrain TEST NVIDIA device identity root - not a vendor", KeyKind::P384, SignStyle::Ecdsa},
    {kNvidiaDeviceCa, "nvidia_device_ca.key.pem", kTestNvidiaDeviceRoot,
     "teetrain TEST NVIDIA GH100 provisioner CA - not a vendor", KeyKind::P384, SignStyle::Ecdsa},
    {kTestNvidiaRimRoot, "nvidia_rim_root.key.pem", "", "teetrain TEST NVIDIA RIM root - not a vendor",
     KeyKind::P384, SignStyle::Ecdsa},
    {"nvidia_rim_signer.pem", "nvidia_rim_signer.key.pem", kTestNvidiaRimRoot,
     "teetrain TEST NVIDIA RIM signer - not a vendor", KeyKind::P384, SignStyle::Ecdsa},
}};

Signer load_signer(const std::filesystem::path& dir, const char* cert_file) {
  const auto* a = std::find_if(kAuthorities.begin(), kAuthorities.end(),
                               [&](const Authority& x) { return std::strcmp(x.cert, cert_file) == 0; });
  return {read_cert(dir / a->cert), read_key(dir / a->key)};
}

void make_roots(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  long serial = 1;
  for (const Authority& a : kAuthorities) {
    Key key = generate_key(a.kind);
    const CertSpec spec{a.common_name, serial++, -86400L, 3650L * 86400L, true, a.style};
    if (*a.parent == '\0') {
      write_cert(dir / a.cert, make_cert(spec, key.get(), nullptr, key.get()).get());
    } else {
      const Signer parent = load_signer(dir, a.parent);
      write_cert(dir / a.cert, make_cert(spec, key.get(), parent.cert.get(), parent.key.get()).get());
    }
    write_key(dir / a.key, key.get());
  }
  const Cert tcb_signing = read_cert(dir / kIntelTcbSigning);
  std::ofstream(dir / kIntelQeIdentityChain)
      << pem_of(tcb_signing.get()) << pem_of(read_cert(dir / kTestIntelRoot).get());
  const std::array<std::pair<const char*, const char*>, 3> crls = {
      {{kIntelPckCa, kIntelPckCrl}, {kTestAmdAsk, kAmdAskCrl}, {kNvidiaDeviceCa, kNvidiaDeviceCrl}}};
  for (const auto& [issuer, crl] : crls) {
    const Signer s = load_signer(dir, issuer);
    write_crl(dir / crl, s.cert.get(), s.key.get());
  }
}

}  // namespace tt::tee::evidence::test_vendor
