// issue_gpu_rims (test_vendor.h): NVIDIA-shaped RIMs (SWID tags, tee/evidence/rim.h) whose golden values
// are a test GPU's measurements, signed with xmlsec1 as NVIDIA's are: one enveloped signature over the
// whole document (Reference URI=""), ECDSA P-384 over SHA-384, exclusive canonicalization, and the
// signer's chain in KeyInfo. KeyInfo is added after signing: the enveloped transform leaves the whole
// Signature element out of the digest, and SignedInfo does not cover KeyInfo.
#include <openssl/x509.h>
// xmlsec.h first: the other xmlsec headers need its definitions.
#include <xmlsec/xmlsec.h>
//
#include <xmlsec/openssl/crypto.h>
#include <xmlsec/openssl/evp.h>
#include <xmlsec/templates.h>
#include <xmlsec/xmldsig.h>
#include <xmlsec/xmltree.h>

#include "base/error.h"
#include "tee/errors.h"
#include "tee/evidence/bundled_roots.h"
#include "tee/evidence/nvidia_evidence.h"
#include "tee/evidence/nvidia_opaque.h"
#include "tee/evidence/rim.h"
#include "tee/evidence/xml.h"
#include "tests/support/test_vendor/test_vendor.h"
#include "tests/support/test_vendor/vendor_pki.h"

namespace tt::tee::evidence::test_vendor {
namespace {

constexpr const char* kRimSigner = "nvidia_rim_signer.pem";
constexpr std::uint16_t kVbiosVersionField = 6;  // opaque field type (tee/evidence/nvidia_opaque.cpp)

// The unsigned SWID tag: one Resource per measurement in [first, last) (RIM index = block - 1).
std::string unsigned_tag(const GpuSpec& spec, const std::string& version, std::size_t first,
                         std::size_t last) {
  std::string xml = std::string("<SoftwareIdentity xmlns=\"") + kSwidNs + "\" xmlns:ns2=\"" + kSha384Ns +
                    "\" name=\"GH100\" tagId=\"teetrain-test-" + version + "\" version=\"1.0\">" +
                    "<Meta colloquialVersion=\"" + version + "\" product=\"GH100\"/><Payload>";
  for (std::size_t i = first; i < last; ++i)
    xml += "<Resource type=\"Measurement\" index=\"" + std::to_string(i) +
           "\" active=\"True\" alternatives=\"1\" ns2:Hash0=\"" + to_hex(spec.measurements[i]) +
           "\" name=\"TestMeasurement_" + std::to_string(i) + "\" size=\"48\"/>";
  return xml + "</Payload></SoftwareIdentity>";
}

CPtr<xmlSecKey, xmlSecKeyDestroy> xmlsec_key(const Key& key) {
  if (EVP_PKEY_up_ref(key.get()) != 1) throw CryptoError("RIM signer key reference");
  xmlSecKeyDataPtr data = xmlSecOpenSSLEvpKeyAdopt(key.get());
  CPtr<xmlSecKey, xmlSecKeyDestroy> out(xmlSecKeyCreate());
  if (data == nullptr || !out || xmlSecKeySetValue(out.get(), data) < 0)
    throw CryptoError("xmlsec1: cannot make the RIM signer's key");
  return out;
}

void add_key_info(xmlNode* signature, const std::vector<const X509*>& chain) {
  xmlNode* key_info = xmlSecTmplSignatureEnsureKeyInfo(signature, nullptr);
  xmlNode* data = key_info == nullptr ? nullptr : xmlSecTmplKeyInfoAddX509Data(key_info);
  if (data == nullptr) throw CryptoError("xmlsec1: cannot add KeyInfo");
  for (const X509* cert : chain) {
    unsigned char* der = nullptr;
    const int n = i2d_X509(cert, &der);
    if (n <= 0) throw CryptoError("RIM signer certificate encoding");
    const std::string b64 = encode_base64(ByteView(der, static_cast<std::size_t>(n)));
    OPENSSL_free(der);
    // xmlSecTmplX509DataAddCertificate adds one empty node at most: the chain is added as text.
    if (xmlNewTextChild(data, data->ns, reinterpret_cast<const xmlChar*>("X509Certificate"),
                        reinterpret_cast<const xmlChar*>(b64.c_str())) == nullptr)
      throw CryptoError("xmlsec1: cannot add a certificate");
  }
}

std::string signed_tag(const std::filesystem::path& dir, const std::string& xml) {
  ensure_xmlsec();
  const XmlDocPtr doc = read_xml(xml, "test RIM");
  xmlNode* signature = xmlSecTmplSignatureCreate(doc.get(), xmlSecTransformExclC14NId,
                                                 xmlSecOpenSSLTransformEcdsaSha384Id, nullptr);
  if (signature == nullptr) throw CryptoError("xmlsec1: cannot make a signature template");
  xmlAddChild(xmlDocGetRootElement(doc.get()), signature);
  xmlNode* ref = xmlSecTmplSignatureAddReference(signature, xmlSecOpenSSLTransformSha384Id, nullptr,
                                                 reinterpret_cast<const xmlChar*>(""), nullptr);
  if (ref == nullptr || xmlSecTmplReferenceAddTransform(ref, xmlSecTransformEnvelopedId) == nullptr ||
      xmlSecTmplReferenceAddTransform(ref, xmlSecTransformExclC14NId) == nullptr)
    throw CryptoError("xmlsec1: cannot make the signature's reference");
  const Signer signer = load_signer(dir, kRimSigner);
  CPtr<xmlSecDSigCtx, xmlSecDSigCtxDestroy> ctx(xmlSecDSigCtxCreate(nullptr));
  if (!ctx) throw CryptoError("xmlsec1: cannot make a signature context");
  ctx->signKey = xmlsec_key(signer.key).release();  // owned by ctx from here
  if (xmlSecDSigCtxSign(ctx.get(), signature) < 0) throw CryptoError("xmlsec1: cannot sign the test RIM");
  const Cert root = read_cert(dir / kTestNvidiaRimRoot);
  add_key_info(signature, {signer.cert.get(), root.get()});
  xmlChar* out = nullptr;
  int size = 0;
  xmlDocDumpMemory(doc.get(), &out, &size);
  std::string text(reinterpret_cast<const char*>(out), static_cast<std::size_t>(size));
  xmlFree(out);
  return text;
}

}  // namespace

GpuRims issue_gpu_rims(const std::filesystem::path& dir, const GpuSpec& spec) {
  const std::vector<OpaqueField> vbios = {
      {.type = kVbiosVersionField, .value = {spec.vbios_version.begin(), spec.vbios_version.end()}}};
  const std::size_t half = spec.measurements.size() / 2;
  return {.driver = signed_tag(dir, unsigned_tag(spec, spec.driver_version, half, spec.measurements.size())),
          .vbios = signed_tag(dir, unsigned_tag(spec, vbios_version(vbios).value_or(""), 0, half))};
}

void write_rim_crls(const std::filesystem::path& dir, const std::filesystem::path& out) {
  std::filesystem::create_directories(out);
  const Signer root = load_signer(dir, kTestNvidiaRimRoot);
  const long signer = ASN1_INTEGER_get(X509_get0_serialNumber(read_cert(dir / kRimSigner).get()));
  write_crl(out / kRimCrlEmpty, root.cert.get(), root.key.get(),
            {.revoked = {}, .last_update_s = -3600, .next_update_s = 30L * 86400L});
  write_crl(out / kRimCrlRevoking, root.cert.get(), root.key.get(),
            {.revoked = {signer}, .last_update_s = -3600, .next_update_s = 30L * 86400L});
  write_crl(out / kRimCrlExpired, root.cert.get(), root.key.get(),
            {.revoked = {}, .last_update_s = -2L * 86400L, .next_update_s = -86400L});
}

}  // namespace tt::tee::evidence::test_vendor
