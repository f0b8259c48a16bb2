// issue_tdx_quote (test_vendor.h): a TDX v4 quote laid out and signed as tee/evidence/tdx_quote.h reads it.
#include <ctime>

#include "tee/digest.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/tdx_quote.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence::test_vendor {
namespace {

constexpr std::size_t kQeReportBytes = 384;
constexpr std::size_t kQeReportDataAt = 320;

// Header (48) || TD quote body (584), with the spec's fields at the body offsets of tdx_quote.cpp.
std::vector<std::uint8_t> header_and_body(const TdxSpec& spec) {
  std::vector<std::uint8_t> out;
  put_le(out, 4, 2);                              // version
  put_le(out, 2, 2);                              // attestation key type: ECDSA P-256
  put_le(out, 0x81, 4);                           // TEE type: TDX
  put_le(out, 0, 4);                              // QE SVN, PCE SVN
  const std::string vendor = "teetrain TEST QE";  // QE vendor id (16)
  put_bytes(out, bytes_of(vendor));
  out.resize(kTdxHeaderBytes + kTdxBodyBytes, 0);
  const std::size_t body = kTdxHeaderBytes;
  set_bytes(out, body + 0, spec.tee_tcb_svn);
  set_bytes(out, body + 64, spec.mrsigner_seam);
  set_le(out, body + 120, spec.td_attributes, 8);
  set_bytes(out, body + 136, spec.mrtd);
  for (std::size_t i = 0; i < spec.rtmr.size(); ++i) set_bytes(out, body + 328 + 48 * i, spec.rtmr[i]);
  set_bytes(out, body + 520, spec.report_data);
  return out;
}

// The quoting enclave's report: its identity, and REPORTDATA = SHA-256(attestation key || auth data) || 0.
std::vector<std::uint8_t> qe_report(ByteView attestation_key, ByteView auth_data) {
  std::vector<std::uint8_t> report(kQeReportBytes, 0);
  for (std::size_t i = 0; i < 32; ++i) {
    report[64 + i] = 0xE0;   // MRENCLAVE
    report[128 + i] = 0x5E;  // MRSIGNER
  }
  report[256] = 2;  // ISVPRODID
  report[258] = 8;  // ISVSVN
  Sha256 h;
  set_bytes(report, kQeReportDataAt, h.update(attestation_key).update(auth_data).finish());
  return report;
}

// A DER element: tag, length (short or long form), contents.
std::vector<std::uint8_t> der(std::uint8_t tag, ByteView contents) {
  std::vector<std::uint8_t> out;
  out.push_back(tag);
  const std::size_t n = contents.size();
  if (n >= 0x100) out.push_back(0x82);
  if (n >= 0x100) out.push_back(static_cast<std::uint8_t>(n >> 8));
  if (n >= 0x80 && n < 0x100) out.push_back(0x81);
  out.push_back(static_cast<std::uint8_t>(n & 0xff));
  put_bytes(out, contents);
  return out;
}

// SEQUENCE { OID 1.2.840.113741.1.13.1.<arc>, value }.
std::vector<std::uint8_t> sgx_entry(std::vector<std::uint8_t> arc, ByteView value) {
  std::vector<std::uint8_t> oid = {0x2a, 0x86, 0x48, 0x86, 0xf8, 0x4d, 0x01, 0x0d, 0x01};
  oid.insert(oid.end(), arc.begin(), arc.end());
  std::vector<std::uint8_t> entry = der(0x06, oid);
  put_bytes(entry, value);
  return der(0x30, entry);
}

// Intel's SGX extensions of a PCK certificate: PPID, TCB (16 components, PCESVN, CPUSVN), PCE-ID, FMSPC.
std::vector<std::uint8_t> sgx_extensions() {
  const std::vector<std::uint8_t> small_int = {0x02, 0x01, kTestPckSvn};
  std::vector<std::uint8_t> tcb;
  for (std::uint8_t i = 1; i <= 16; ++i) put_bytes(tcb, sgx_entry({2, i}, small_int));
  put_bytes(tcb, sgx_entry({2, 17}, std::vector<std::uint8_t>{0x02, 0x01, kTestPckPceSvn}));
  put_bytes(tcb, sgx_entry({2, 18}, der(0x04, std::vector<std::uint8_t>(16, kTestPckSvn))));
  std::vector<std::uint8_t> all = sgx_entry({1}, der(0x04, std::vector<std::uint8_t>(16, 0x9d)));
  put_bytes(all, sgx_entry({2}, der(0x30, tcb)));
  put_bytes(all, sgx_entry({3}, der(0x04, std::vector<std::uint8_t>{0, 0})));
  put_bytes(all, sgx_entry({4}, der(0x04, kTestFmspc)));
  return der(0x30, all);
}

// "2026-12-06T08:50:32Z", `from_now_s` seconds from now: a nextUpdate.
std::string iso_from_now(long from_now_s) {
  const std::time_t when = std::time(nullptr) + from_now_s;
  std::tm tm{};
  gmtime_r(&when, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Intel's collateral JSON: {"<key>": body, "signature": r || s by the test TCB signing key over body}.
std::string sign_collateral(const std::filesystem::path& dir, const char* key, const std::string& body) {
  const Signer signer = load_signer(dir, kIntelTcbSigning);
  return std::string("{\"") + key + "\":" + body + ",\"signature\":\"" +
         to_hex(sign_raw(signer.key.get(), bytes_of(body), 32)) + "\"}";
}

// The PCK chain, PEM, leaf first: a fresh PCK leaf (per the variant, with the SGX extensions), the PCK
// platform CA, the root.
std::string pck_chain(const std::filesystem::path& dir, Variant variant, const Key& pck_key) {
  const Signer ca = load_signer(dir, kIntelPckCa);
  const Cert leaf = make_cert(leaf_spec("teetrain TEST Intel SGX PCK certificate - not a vendor", variant),
                              pck_key.get(), ca.cert.get(), ca.key.get());
  add_raw_extension(leaf.get(), "1.2.840.113741.1.13.1", sgx_extensions());
  sign_cert(leaf.get(), ca.key.get(), SignStyle::Ecdsa);
  return pem_of(leaf.get()) + pem_of(ca.cert.get()) + pem_of(read_cert(dir / kTestIntelRoot).get());
}

}  // namespace

std::vector<std::uint8_t> issue_tdx_quote(const std::filesystem::path& dir, const TdxSpec& spec) {
  const Key pck_key = generate_key(KeyKind::P256);
  const Key attestation_key = generate_key(KeyKind::P256);
  const std::vector<std::uint8_t> ak = p256_xy(attestation_key.get());
  const std::vector<std::uint8_t> auth_data(32, 0xA7);
  const std::vector<std::uint8_t> qe = qe_report(ak, auth_data);
  const std::string chain = pck_chain(dir, spec.variant, pck_key);

  std::vector<std::uint8_t> certification;  // type 6's data: QE report, its signature, auth data, type 5
  put_bytes(certification, qe);
  put_bytes(certification, sign_raw(pck_key.get(), qe, 32));
  put_le(certification, auth_data.size(), 2);
  put_bytes(certification, auth_data);
  put_le(certification, 5, 2);
  put_le(certification, chain.size(), 4);
  put_bytes(certification, bytes_of(chain));

  std::vector<std::uint8_t> quote = header_and_body(spec);
  std::vector<std::uint8_t> signature_data;
  put_bytes(signature_data, sign_raw(attestation_key.get(), quote, 32));
  put_bytes(signature_data, ak);
  put_le(signature_data, 6, 2);
  put_le(signature_data, certification.size(), 4);
  put_bytes(signature_data, certification);
  put_le(quote, signature_data.size(), 4);
  put_bytes(quote, signature_data);
  return quote;
}

std::string issue_qe_identity(const std::filesystem::path& dir, const QeIdentitySpec& spec) {
  const std::string next = iso_from_now(spec.next_update_s);
  // The identity of qe_report() above: MRSIGNER 5e.., ISVPRODID 2, ISVSVN 8.
  std::string mrsigner;
  for (int i = 0; i < 32; ++i) mrsigner += "5e";
  const std::string body =
      std::string("{\"id\":\"TD_QE\",\"version\":2,\"issueDate\":\"2026-01-01T00:00:00Z\",") +
      "\"nextUpdate\":\"" + next +
      "\",\"miscselect\":\"00000000\",\"miscselectMask\":\"FFFFFFFF\","
      "\"attributes\":\"00000000000000000000000000000000\","
      "\"attributesMask\":\"FFFFFFFFFFFFFFFF0000000000000000\",\"mrsigner\":\"" +
      mrsigner +
      "\",\"isvprodid\":2,\"tcbLevels\":[{\"tcb\":{\"isvsvn\":8},\"tcbDate\":"
      "\"2026-01-01T00:00:00Z\",\"tcbStatus\":\"" +
      spec.status + "\"}]}";
  return sign_collateral(dir, "enclaveIdentity", body);
}

namespace {
// "tdxModule" and, when asked, "tdxModuleIdentities" of the TCB info body, with a trailing comma.
std::string tdx_modules(const TcbInfoSpec& spec) {
  const std::string signer = "\"mrsigner\":\"" + to_hex(spec.module_mrsigner) +
                             "\",\"attributes\":\"0000000000000000\",\"attributesMask\":\"FFFFFFFFFFFFFFFF\"";
  std::string out = "\"tdxModule\":{" + signer + "},";
  if (!spec.module_identities) return out;
  out += "\"tdxModuleIdentities\":[";
  for (const char* id : {"TDX_01", "TDX_02"})
    out += std::string(out.back() == '[' ? "" : ",") + "{\"id\":\"" + id + "\"," + signer +
           ",\"tcbLevels\":[{\"tcb\":{\"isvsvn\":0},\"tcbDate\":\"2026-01-01T00:00:00Z\",\"tcbStatus\":\"" +
           spec.module_status + "\"}]}";
  return out + "],";
}
}  // namespace

std::string issue_tcb_info(const std::filesystem::path& dir, const TcbInfoSpec& spec) {
  const auto components = [](const auto& svns) {
    std::string out = "[";
    for (std::size_t i = 0; i < 16; ++i)
      out += (i ? ",{\"svn\":" : "{\"svn\":") + std::to_string(svns[i]) + "}";
    return out + "]";
  };
  std::array<std::uint8_t, 16> sgx{};
  sgx.fill(kTestPckSvn);
  const std::string body =
      "{\"id\":\"TDX\",\"version\":3,\"issueDate\":\"2026-01-01T00:00:00Z\",\"nextUpdate\":\"" +
      iso_from_now(spec.next_update_s) + "\",\"fmspc\":\"" + to_hex(spec.fmspc) +
      "\",\"pceId\":\"0000\",\"tcbType\":0,\"tcbEvaluationDataNumber\":1," + tdx_modules(spec) +
      "\"tcbLevels\":[{\"tcb\":{"
      "\"sgxtcbcomponents\":" +
      components(sgx) + ",\"pcesvn\":" + std::to_string(kTestPckPceSvn) +
      ",\"tdxtcbcomponents\":" + components(spec.tdx_svn) +
      "},\"tcbDate\":\"2026-01-01T00:00:00Z\",\"tcbStatus\":\"" + spec.status + "\"}]}";
  return sign_collateral(dir, "tcbInfo", body);
}

}  // namespace tt::tee::evidence::test_vendor
