// The VCEK of an SEV-SNP report (tee/evidence/snp_report.h): reading it, and what AMD's extensions in it
// say about the chip and TCB it was issued for.
#include <openssl/asn1.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include <array>
#include <memory>

#include "base/error.h"
#include "tee/errors.h"
#include "tee/evidence/field_text.h"
#include "tee/evidence/snp_report.h"
#include "tee/openssl_ptr.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

constexpr const char* kProductNameOid = "1.3.6.1.4.1.3704.1.2";
constexpr const char* kHwidOid = "1.3.6.1.4.1.3704.1.4";

struct Spl {
  const char* oid;
  std::size_t tcb_byte;  // where REPORTED_TCB holds the same security patch level
};
// AMD's VCEK certificate specification: one INTEGER extension per TCB_VERSION byte (Milan, Genoa).
constexpr std::array<Spl, 8> kSpls = {{
    {"1.3.6.1.4.1.3704.1.3.1", 0},  // blSPL: boot loader
    {"1.3.6.1.4.1.3704.1.3.2", 1},  // teeSPL
    {"1.3.6.1.4.1.3704.1.3.4", 2},  // spl_4 .. spl_7: reserved, 0
    {"1.3.6.1.4.1.3704.1.3.5", 3},
    {"1.3.6.1.4.1.3704.1.3.6", 4},
    {"1.3.6.1.4.1.3704.1.3.7", 5},
    {"1.3.6.1.4.1.3704.1.3.3", 6},  // snpSPL
    {"1.3.6.1.4.1.3704.1.3.8", 7},  // ucodeSPL: microcode
}};

// The contents of the extension `oid` (the DER inside its OCTET STRING), empty when absent.
ByteView extension(const Certificate& cert, const char* oid) {
  CPtr<ASN1_OBJECT, ASN1_OBJECT_free> object(OBJ_txt2obj(oid, 1));
  if (!object) throw_openssl_error("AMD extension OID");
  const int at = X509_get_ext_by_OBJ(cert.native(), object.get(), -1);
  if (at < 0) return {};
  const ASN1_OCTET_STRING* data = X509_EXTENSION_get_data(X509_get_ext(cert.native(), at));
  return {ASN1_STRING_get0_data(data), static_cast<std::size_t>(ASN1_STRING_length(data))};
}

// A DER INTEGER 0 .. 255 that fills `der`; nullopt otherwise.
std::optional<std::uint8_t> spl_value(ByteView der) {
  const unsigned char* p = der.data();
  CPtr<ASN1_INTEGER, ASN1_INTEGER_free> v(d2i_ASN1_INTEGER(nullptr, &p, static_cast<long>(der.size())));
  const long n = v && p == der.data() + der.size() ? ASN1_INTEGER_get(v.get()) : -1;
  clear_openssl_errors();
  if (n < 0 || n > 255) return std::nullopt;
  return static_cast<std::uint8_t>(n);
}

std::string ia5_text(ByteView der) {
  const unsigned char* p = der.data();
  CPtr<ASN1_IA5STRING, ASN1_IA5STRING_free> s(d2i_ASN1_IA5STRING(nullptr, &p, static_cast<long>(der.size())));
  clear_openssl_errors();
  if (!s) return {};
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(s.get())),
          static_cast<std::size_t>(ASN1_STRING_length(s.get()))};
}

}  // namespace

VcekExtensions read_vcek_extensions(const Certificate& vcek) {
  VcekExtensions out;
  out.product = ia5_text(extension(vcek, kProductNameOid));
  const ByteView hwid = extension(vcek, kHwidOid);
  out.hwid.assign(hwid.begin(), hwid.end());
  std::array<std::uint8_t, 8> tcb{};
  for (const Spl& spl : kSpls) {
    const std::optional<std::uint8_t> v = spl_value(extension(vcek, spl.oid));
    if (!v) {
      out.problem = std::string("the VCEK has no valid TCB extension ") + spl.oid;
      return out;
    }
    tcb[spl.tcb_byte] = *v;
  }
  out.tcb = tcb;
  return out;
}

std::vector<Certificate> load_vcek(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, "--vcek", kMaxEvidenceFileBytes);
  const std::string what = "--vcek '" + printable_path(path) + "'";
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.find("-----BEGIN") != std::string_view::npos) return certificates_from_pem(text, what);
  try {
    return {Certificate::from_der(bytes)};
  } catch (const IntegrityError&) {
    throw InputError(what +
                     ": neither PEM certificates nor one DER certificate (give the VCEK as AMD's key "
                     "distribution service serves it, DER, or PEM with the VCEK first)");
  }
}

std::string describe_vcek(const std::vector<Certificate>& chain) {
  const VcekExtensions ext = read_vcek_extensions(chain.front());
  std::string out = field_line("VCEK", chain.front().describe());
  out += field_line("VCEK product", ext.product.empty() ? "(no productName extension)" : ext.product);
  out += field_line("VCEK TCB", ext.tcb ? snp_tcb_text(*ext.tcb) : ext.problem);
  out += ext.hwid.empty() ? field_line("VCEK hwID", "(none: not a VCEK?)") : hex_line("VCEK hwID", ext.hwid);
  for (std::size_t i = 1; i < chain.size(); ++i)
    out += "    given with it [" + std::to_string(i) + "] " + chain[i].describe() + "\n";
  return out;
}

}  // namespace tt::tee::evidence
