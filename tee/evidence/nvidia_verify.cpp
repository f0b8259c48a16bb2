#include "tee/evidence/nvidia_verify.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/error.h"
#include "tee/errors.h"
#include "tee/evidence/ecdsa.h"
#include "tee/openssl_ptr.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

CheckOutcome check_chain(const GpuEvidence& gpu, const EvidenceTrust& trust) {
  // The chain carries its own copy of the root; only the bundled one is trusted (a path through the
  // copy would end at the bundled root anyway, or fail if the copy is another root).
  PathOptions options = sent_chain_options(gpu.chain, trust.crls, trust.at_unix_time);
  options.stale_crl = trust.stale_crl;
  const ChainVerdict v = verify_certificate_path(trust.device_root, gpu.chain.front(), options);
  if (!v) return {Check::CertificateChain, false, v.reason};
  const std::string revocation =
      revocation_text(trust.crls.size(), applicable_crls(trust.crls, trust.device_root, gpu.chain));
  return {Check::CertificateChain, true,
          std::to_string(gpu.chain.size()) + " certificates lead to " + trust.device_root.subject() + "; " +
              revocation};
}

CheckOutcome check_signature(const GpuEvidence& gpu) {
  const Certificate& leaf = gpu.chain.front();
  if (!is_on_curve(X509_get0_pubkey(leaf.native()), Curve::P384))
    return {Check::Signature, false, "the leaf certificate's key is not ECDSA P-384"};
  const bool ok = verify_ecdsa_p384(leaf, gpu.transcript.signed_bytes, gpu.transcript.response.signature);
  return {Check::Signature, ok,
          ok ? "ECDSA P-384 over SHA-384 of the request and response (" +
                   std::to_string(gpu.transcript.signed_bytes.size()) + " bytes), by " + leaf.subject()
             : "the report's signature does not verify under the leaf certificate's key (report altered?)"};
}

CheckOutcome check_nonce(const GpuEvidence& gpu, const EvidenceTrust& trust) {
  const SpdmNonce& signed_nonce = gpu.transcript.request.nonce;
  if (gpu.stated_nonce && !equal_ct(*gpu.stated_nonce, signed_nonce))
    return {Check::Nonce, false, "the file's \"nonce\" field differs from the nonce the GPU signed"};
  if (!trust.nonce)
    return {Check::Nonce, true, "freshness NOT checked (give --nonce with the challenge you issued)"};
  if (!equal_ct(*trust.nonce, signed_nonce))
    return {
        Check::Nonce, false,
        "the report answers nonce " + to_hex(signed_nonce) + ", not this verifier's challenge (replayed?)"};
  return {Check::Nonce, true, "the signed request carries this verifier's challenge (fresh)"};
}

}  // namespace

std::size_t applicable_crls(const std::vector<std::shared_ptr<X509_crl_st>>& crls, const Certificate& root,
                            const std::vector<Certificate>& chain) {
  std::size_t n = 0;
  for (const auto& crl : crls) {
    const X509_NAME* issuer = X509_CRL_get_issuer(crl.get());
    bool found = X509_NAME_cmp(issuer, X509_get_subject_name(root.native())) == 0;
    for (const Certificate& c : chain)
      found = found || X509_NAME_cmp(issuer, X509_get_subject_name(c.native())) == 0;
    n += found ? 1 : 0;
  }
  return n;
}

std::string revocation_text(std::size_t given, std::size_t applicable) {
  if (given == 0) return "revocation NOT checked (no --crl given; this verifier makes no network call)";
  if (applicable == 0)
    return "revocation NOT checked (none of the given lists is issued by a CA of this chain)";
  return "not revoked (checked against " + std::to_string(applicable) + " given list(s))";
}

const char* check_name(Check check) {
  switch (check) {
    case Check::CertificateChain:
      return "certificate chain";
    case Check::Signature:
      return "signature";
    case Check::Nonce:
      return "nonce";
    case Check::RimSignature:
      return "RIM signature";
    case Check::RimVersion:
      return "RIM version";
    case Check::Measurements:
      return "measurements";
    case Check::QeReport:
      return "QE report";
    case Check::AttestationKey:
      return "attestation key";
    case Check::ChipId:
      return "chip id";
    case Check::ReportedTcb:
      return "reported TCB";
    case Check::TrustRoots:
      return "trust roots";
    case Check::Collateral:
      return "collateral";
    case Check::QeIdentity:
      return "QE identity";
    case Check::TcbStatus:
      return "TCB status";
    case Check::TdxModule:
      return "TDX module";
  }
  return "?";
}

bool verify_ecdsa_p384(const Certificate& signer, ByteView data, ByteView signature) {
  return verify_ecdsa_raw(X509_get0_pubkey(signer.native()), Curve::P384, data, signature);
}

std::vector<CheckOutcome> verify_gpu_evidence(const GpuEvidence& gpu, const EvidenceTrust& trust) {
  return {check_chain(gpu, trust), check_signature(gpu), check_nonce(gpu, trust)};
}

std::shared_ptr<X509_crl_st> load_crl(const std::filesystem::path& path, const char* flag) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, flag, kMaxPemFileBytes);
  CPtr<BIO, BIO_free> bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) throw_openssl_error("CRL buffer");
  X509CrlPtr crl(PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr));
  if (!crl) {
    const unsigned char* p = bytes.data();
    crl.reset(d2i_X509_CRL(nullptr, &p, static_cast<long>(bytes.size())));
  }
  clear_openssl_errors();
  if (!crl)
    throw InputError(std::string(flag) + " '" + printable_path(path) + "': not a PEM or DER revocation list");
  return std::shared_ptr<X509_crl_st>(std::move(crl));
}

}  // namespace tt::tee::evidence
