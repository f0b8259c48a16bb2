#include "tee/evidence/tdx_quote.h"

#include <array>

#include "base/error.h"
#include "tee/byte_reader.h"
#include "tee/evidence/field_text.h"

namespace tt::tee::evidence {
namespace {

constexpr std::uint16_t kVersion4 = 4;
constexpr std::uint16_t kEcdsaP256 = 2;
constexpr std::uint32_t kTeeTdx = 0x81;
constexpr std::uint16_t kQeReportCertification = 6;
constexpr std::uint16_t kPckChainCertification = 5;
constexpr std::size_t kQeReportBytes = 384;
constexpr std::size_t kRawSignatureBytes = 64;

struct Field {
  const char* name;
  std::size_t offset;
  std::size_t size;
};

// The TD quote body (Intel's TDX DCAP quote format v4, "TD Quote Body").
constexpr std::array<Field, 15> kBodyFields = {{
    {"TEE_TCB_SVN", 0, 16},
    {"MRSEAM", 16, 48},
    {"MRSIGNERSEAM", 64, 48},
    {"SEAMATTRIBUTES", 112, 8},
    {"TDATTRIBUTES", 120, 8},
    {"XFAM", 128, 8},
    {"MRTD", 136, 48},
    {"MRCONFIGID", 184, 48},
    {"MROWNER", 232, 48},
    {"MROWNERCONFIG", 280, 48},
    {"RTMR0", 328, 48},
    {"RTMR1", 376, 48},
    {"RTMR2", 424, 48},
    {"RTMR3", 472, 48},
    {"REPORTDATA", 520, 64},
}};

// The quoting enclave's SGX report: what identifies it.
constexpr std::array<Field, 5> kQeFields = {{
    {"QE MRENCLAVE", 64, 32},
    {"QE MRSIGNER", 128, 32},
    {"QE ISVPRODID", 256, 2},
    {"QE ISVSVN", 258, 2},
    {"QE REPORTDATA", 320, 64},
}};

std::vector<std::uint8_t> copy(ByteView b) {
  return {b.begin(), b.end()};
}

void expect(bool ok, const std::string& what) {
  if (!ok) throw InputError(what);
}

void parse_certification(ByteReader& sig, TdxQuote& q) {
  const std::string what = sig.what();
  expect(sig.u16("certification data type") == kQeReportCertification,
         what + ": certification data is not a QE report (type 6)");
  ByteReader cert(sig.take(sig.u32("certification data size"), "certification data"),
                  what + ": QE report data");
  q.qe_report = copy(cert.take(kQeReportBytes, "QE report"));
  q.qe_report_signature = copy(cert.take(kRawSignatureBytes, "QE report signature"));
  q.qe_auth_data = copy(cert.take(cert.u16("QE auth data size"), "QE auth data"));
  expect(cert.u16("PCK certification data type") == kPckChainCertification,
         what + ": the QE report's certification data is not a PCK certificate chain (type 5)");
  const ByteView pem = cert.take(cert.u32("PCK chain size"), "PCK chain");
  q.pck_chain = certificates_from_pem(std::string_view(reinterpret_cast<const char*>(pem.data()), pem.size()),
                                      what + ": PCK chain");
  expect(cert.remaining() == 0,
         cert.what() + ": " + std::to_string(cert.remaining()) + " bytes after the PCK chain");
}

}  // namespace

bool looks_like_tdx_quote(ByteView b) {
  return b.size() >= 8 && load_le(b.subspan(0, 2)) == kVersion4 && load_le(b.subspan(4, 4)) == kTeeTdx;
}

TdxQuote parse_tdx_quote(ByteView bytes, const std::string& where) {
  ByteReader in(bytes, where + ": TDX quote");
  TdxQuote q;
  q.source = where;
  q.version = in.u16("version");
  q.attestation_key_type = in.u16("attestation key type");
  q.tee_type = in.u32("TEE type");
  expect(q.version == kVersion4 && q.tee_type == kTeeTdx,
         in.what() + ": not a TDX quote of version 4 (version " + std::to_string(q.version) + ", TEE type " +
             std::to_string(q.tee_type) + ")");
  expect(q.attestation_key_type == kEcdsaP256, in.what() + ": attestation key type is not ECDSA P-256");
  (void)in.take(kTdxHeaderBytes - 8 + kTdxBodyBytes, "header and TD quote body");
  q.signed_bytes = copy(bytes.subspan(0, kTdxHeaderBytes + kTdxBodyBytes));
  ByteReader sig(in.take(in.u32("signature data length"), "signature data"),
                 where + ": quote signature data");
  q.signature = copy(sig.take(kRawSignatureBytes, "quote signature"));
  q.attestation_key = copy(sig.take(kRawSignatureBytes, "attestation key"));
  parse_certification(sig, q);
  expect(sig.remaining() == 0,
         sig.what() + ": " + std::to_string(sig.remaining()) + " bytes after the certification data");
  q.trailing_bytes = in.remaining();
  return q;
}

std::string describe(const TdxQuote& q) {
  std::string out = "Intel TDX quote: " + q.source + " (version " + std::to_string(q.version) + ", " +
                    std::to_string(q.signed_bytes.size()) + " signed bytes, ECDSA P-256 attestation key)\n";
  out += hex_line("QE vendor id", ByteView(q.signed_bytes).subspan(12, 16));
  for (const Field& f : kBodyFields) out += hex_line(f.name, q.body().subspan(f.offset, f.size));
  for (const Field& f : kQeFields) out += hex_line(f.name, ByteView(q.qe_report).subspan(f.offset, f.size));
  out += hex_line("attestation key", q.attestation_key);
  out += "  PCK chain           " + std::to_string(q.pck_chain.size()) + " certificates, leaf first\n";
  for (std::size_t i = 0; i < q.pck_chain.size(); ++i)
    out += "    [" + std::to_string(i) + "] " + q.pck_chain[i].describe() + "\n";
  if (q.trailing_bytes > 0)
    out += "  after the quote     " + std::to_string(q.trailing_bytes) + " bytes (not part of it: ignored)\n";
  return out;
}

}  // namespace tt::tee::evidence
