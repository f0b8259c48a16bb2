// The RIM's XML signature, checked with xmlsec1 (its OpenSSL back end): XML-DSig needs exclusive and
// inclusive canonicalization and the enveloped-signature transform done exactly as the signer did, which
// is what that library is made for; we do not canonicalize XML ourselves.
#include <openssl/evp.h>
#include <openssl/x509.h>
// xmlsec.h first: the other xmlsec headers need its definitions.
#include <xmlsec/xmlsec.h>
//
#include <xmlsec/errors.h>
#include <xmlsec/keys.h>
#include <xmlsec/openssl/app.h>
#include <xmlsec/openssl/crypto.h>
#include <xmlsec/openssl/evp.h>
#include <xmlsec/transforms.h>
#include <xmlsec/xmldsig.h>
#include <xmlsec/xmltree.h>

#include "base/error.h"
#include "tee/errors.h"
#include "tee/evidence/rim.h"
#include "tee/evidence/xml.h"
#include "tee/openssl_ptr.h"

namespace tt::tee::evidence {
namespace {

// xmlsec reports errors through a callback that prints to stderr by default; our verdict says what
// failed in one line, so its own report is dropped.
void silent(const char*, int, const char*, const char*, const char*, int, const char*) {}

// Note [xmlsec initialisation]: xmlsec keeps process-wide registries (transforms, key data) that must
// be set up once before any use and are never torn down while the process may still verify; a
// function-local static does it on first use, thread-safely, and only in processes that read a RIM.
bool init_xmlsec() {
  xmlSecErrorsSetCallback(silent);
  if (xmlSecInit() < 0 || xmlSecCheckVersion() != 1 || xmlSecOpenSSLAppInit(nullptr) < 0 ||
      xmlSecOpenSSLInit() < 0)
    throw CryptoError("xmlsec1 (the XML signature library) failed to initialise");
  return true;
}

// The signer certificate's public key as an xmlsec key (the only key the check may use).
CPtr<xmlSecKey, xmlSecKeyDestroy> signer_key(const Certificate& signer) {
  CPtr<EVP_PKEY, EVP_PKEY_free> pub(X509_get_pubkey(signer.native()));
  if (!pub) throw_openssl_error("RIM signer key");
  xmlSecKeyDataPtr data = xmlSecOpenSSLEvpKeyAdopt(pub.get());
  if (data == nullptr) throw CryptoError("xmlsec1: the RIM signer's key type is not supported");
  (void)pub.release();  // adopted by `data`
  CPtr<xmlSecKey, xmlSecKeyDestroy> key(xmlSecKeyCreate());
  if (!key || xmlSecKeySetValue(key.get(), data) < 0) {
    xmlSecKeyDataDestroy(data);
    throw CryptoError("xmlsec1: cannot make a key");
  }
  return key;
}

// Exactly one signature, a child of the root, with one reference to the whole document (URI=""):
// anything else would let a signature cover less than the golden values we read.
ChainVerdict check_signature_shape(xmlNode* root) {
  const std::vector<xmlNode*> sigs = descendant_elements(root, "Signature", kDsigNs);
  if (sigs.size() != 1 || sigs.front()->parent != root)
    return {false, "the RIM must carry exactly one signature, at its top level"};
  const std::vector<xmlNode*> refs = descendant_elements(sigs.front(), "Reference", kDsigNs);
  if (refs.size() != 1 || attribute(refs.front(), "URI") != "")
    return {false, "the RIM's signature does not cover the whole document (one Reference URI=\"\" expected)"};
  return {true, "ok"};
}

void restrict_transforms(xmlSecDSigCtx* ctx) {
  // Only what an enveloped ECDSA/RSA signature over a whole document needs: no XSLT, XPath or
  // external references.
  const xmlSecTransformId c14n[] = {xmlSecTransformInclC14NId, xmlSecTransformInclC14N11Id,
                                    xmlSecTransformExclC14NId};
  const xmlSecTransformId sig[] = {xmlSecOpenSSLTransformEcdsaSha256Id, xmlSecOpenSSLTransformEcdsaSha384Id,
                                   xmlSecOpenSSLTransformEcdsaSha512Id, xmlSecOpenSSLTransformRsaSha256Id,
                                   xmlSecOpenSSLTransformRsaSha384Id,   xmlSecOpenSSLTransformRsaSha512Id};
  const xmlSecTransformId digest[] = {xmlSecOpenSSLTransformSha256Id, xmlSecOpenSSLTransformSha384Id,
                                      xmlSecOpenSSLTransformSha512Id};
  bool ok = true;
  for (xmlSecTransformId t : c14n) {
    ok = ok && xmlSecDSigCtxEnableSignatureTransform(ctx, t) == 0 &&
         xmlSecDSigCtxEnableReferenceTransform(ctx, t) == 0;
  }
  for (xmlSecTransformId t : sig) ok = ok && xmlSecDSigCtxEnableSignatureTransform(ctx, t) == 0;
  for (xmlSecTransformId t : digest) ok = ok && xmlSecDSigCtxEnableReferenceTransform(ctx, t) == 0;
  ok = ok && xmlSecDSigCtxEnableReferenceTransform(ctx, xmlSecTransformEnvelopedId) == 0;
  if (!ok) throw CryptoError("xmlsec1: cannot restrict the signature transforms");
  ctx->enabledReferenceUris = xmlSecTransformUriTypeEmpty;
}

}  // namespace

void ensure_xmlsec() {
  static const bool ready = init_xmlsec();
  (void)ready;
}

ChainVerdict verify_rim_signature(const Rim& rim, const Certificate& rim_root,
                                  std::optional<std::int64_t> at_unix_time, const RimCrls& crls) {
  if (ChainVerdict chain = verify_rim_chain(rim, rim_root, at_unix_time, crls); !chain) return chain;
  ensure_xmlsec();
  const XmlDocPtr doc = read_xml(rim.xml, rim.source);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (ChainVerdict shape = check_signature_shape(root); !shape) return shape;
  CPtr<xmlSecDSigCtx, xmlSecDSigCtxDestroy> ctx(xmlSecDSigCtxCreate(nullptr));
  if (!ctx) throw CryptoError("xmlsec1: cannot make a signature context");
  restrict_transforms(ctx.get());
  ctx->signKey = signer_key(rim.signer_chain.front()).release();  // owned by ctx from here
  const int rc = xmlSecDSigCtxVerify(ctx.get(), descendant_elements(root, "Signature", kDsigNs).front());
  clear_openssl_errors();
  if (rc < 0)
    return {false, "the RIM's signature cannot be processed (damaged, or an algorithm not allowed)"};
  if (ctx->status != xmlSecDSigStatusSucceeded)
    return {false, "the RIM's XML signature does not verify (RIM altered after signing?)"};
  return {true, "XML signature by " + rim.signer_chain.front().subject() + ", chain of " +
                    std::to_string(rim.signer_chain.size()) + " to " + rim_root.subject()};
}

}  // namespace tt::tee::evidence
