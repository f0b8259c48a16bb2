// issue_gpu_evidence (test_vendor.h): an SPDM 1.1 measurement transcript as a Hopper GPU's driver returns
// it (Note [SPDM measurement transcript]), with opaque data, and the P-384 chain that signs it.
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/spdm.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence::test_vendor {
namespace {

constexpr std::uint8_t kSpdm11 = 0x11;
constexpr std::uint16_t kDriverVersion = 3;  // opaque field types (tee/evidence/nvidia_opaque.cpp)
constexpr std::uint16_t kVbiosVersion = 6;

std::vector<std::uint8_t> request(const SpdmNonce& nonce) {
  std::vector<std::uint8_t> out;
  put_le(out, kSpdm11, 1);
  put_le(out, 0xFF01E0, 3);  // GET_MEASUREMENTS, Param1 1: signed, Param2 0xFF: every block
  put_bytes(out, nonce);
  put_le(out, 0, 1);  // slot 0
  return out;
}

std::vector<std::uint8_t> opaque_data(const GpuSpec& spec) {
  std::vector<std::uint8_t> out;
  put_le(out, kDriverVersion, 2);
  put_le(out, spec.driver_version.size() + 1, 2);
  put_bytes(out, bytes_of(spec.driver_version));
  put_le(out, 0, 1);  // NUL
  put_le(out, kVbiosVersion, 2);
  put_le(out, spec.vbios_version.size(), 2);
  put_bytes(out, spec.vbios_version);
  return out;
}

// MEASUREMENTS up to its signature: one DMTF digest block per measurement, index 1 on.
std::vector<std::uint8_t> response(const GpuSpec& spec) {
  std::vector<std::uint8_t> record;
  for (std::size_t i = 0; i < spec.measurements.size(); ++i) {
    record.push_back(static_cast<std::uint8_t>(i + 1));
    record.push_back(0x01);  // DMTF
    put_le(record, 3 + spec.measurements[i].size(), 2);
    record.push_back(0x01);  // digest of mutable firmware
    put_le(record, spec.measurements[i].size(), 2);
    put_bytes(record, spec.measurements[i]);
  }
  std::vector<std::uint8_t> out;
  put_le(out, kSpdm11, 1);
  put_le(out, 0x60, 3);  // MEASUREMENTS, Param1 0, Param2 0 (slot 0)
  put_le(out, spec.measurements.size(), 1);
  put_le(out, record.size(), 3);
  put_bytes(out, record);
  put_bytes(out, std::vector<std::uint8_t>(kSpdmNonceBytes, 0x6E));  // the device's own nonce
  const std::vector<std::uint8_t> opaque = opaque_data(spec);
  put_le(out, opaque.size(), 2);
  put_bytes(out, opaque);
  return out;
}

}  // namespace

SdkEvidenceEntry issue_gpu_evidence(const std::filesystem::path& dir, const GpuSpec& spec) {
  const Signer ca = load_signer(dir, kNvidiaDeviceCa);
  const Key key = generate_key(KeyKind::P384);
  const Cert leaf = make_cert(leaf_spec("teetrain TEST NVIDIA GH100 device - not a vendor", spec.variant),
                              key.get(), ca.cert.get(), ca.key.get());
  std::vector<std::uint8_t> report = request(spec.nonce);
  put_bytes(report, response(spec));
  put_bytes(report, sign_raw(key.get(), report, 48));
  return {"HOPPER", spec.nonce, report,
          pem_of(leaf.get()) + pem_of(ca.cert.get()) + pem_of(read_cert(dir / kTestNvidiaDeviceRoot).get())};
}

}  // namespace tt::tee::evidence::test_vendor
