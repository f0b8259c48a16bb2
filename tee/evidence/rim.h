// NVIDIA's reference integrity manifests (RIMs): the golden values a GPU's measurements must match.
// A RIM is an ISO/IEC 19770-2 SWID tag (TCG RIM information model) in XML, one for the driver and one
// for each VBIOS, signed with XML-DSig by a key whose certificate chain (in the signature's KeyInfo)
// leads to NVIDIA's RIM root; its Payload lists one Resource per measurement index:
//   <Resource type="Measurement" index="7" active="True" alternatives="2" size="48"
//             sha384:Hash0="..." sha384:Hash1="..." name="..."/>
// A measurement matches when it equals one of the alternatives; an inactive index is not compared.
//
// Note [RIM index]: a RIM counts measurements from 0, SPDM from 1: RIM index i is the golden value of
// the measurement block with SPDM index i + 1 (NVIDIA's verifier lists the blocks in order and compares
// list position i). When the GPU reports NVDEC0 disabled, NVIDIA's verifier does not compare RIM index
// 35; nor does this one.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tee/identity/x509.h"

namespace tt::tee::evidence {

// Far above a genuine RIM (~20 KiB).
inline constexpr std::uint64_t kMaxRimFileBytes = std::uint64_t{4} << 20;

struct GoldenMeasurement {
  int index = 0;  // RIM index (Note [RIM index])
  bool active = false;
  std::size_t size = 0;
  std::string name;
  std::vector<std::vector<std::uint8_t>> alternatives;
};

struct Rim {
  std::string source;  // the file, for messages
  std::string tag_id;
  std::string product;  // "GH100"
  std::string version;  // colloquialVersion: a driver ("550.90.07") or a VBIOS ("96.00.74.00.01")
  std::vector<GoldenMeasurement> measurements;
  std::vector<Certificate> signer_chain;  // the signature's KeyInfo certificates, signer first
  std::string xml;                        // the document as read: what the signature check parses
  bool is_vbios() const;                  // the version has the VBIOS shape xx.xx.xx.xx.xx
};

// The RIM's structure (no cryptography): InputError naming what is malformed.
Rim parse_rim(std::string_view xml, const std::string& where);
Rim load_rim(const std::filesystem::path& path);

// Sets xmlsec1 up once per process, before any XML signature is checked or made (Note [xmlsec
// initialisation] in rim_signature.cpp).
void ensure_xmlsec();

// NVIDIA's revocation lists for the RIM signing chain (--gpu-rim-crl), as the verifier was given them:
// each certificate of a RIM's signing chain is checked against the list of its issuer, where one is
// given (the issuer's signature on it verified by OpenSSL with the path).
struct RimCrls {
  std::vector<std::string> paths;                  // each list's file, for messages
  std::vector<std::shared_ptr<X509_crl_st>> crls;  // in the order of `paths`
  StaleCrl stale = StaleCrl::Refuse;               // Accept: --allow-expired-collateral
};

// Each of `files_or_dirs` a revocation list (PEM or DER), or a directory whose regular files are all
// lists (in name order). InputError naming --gpu-rim-crl and the file otherwise.
RimCrls load_rim_crls(const std::vector<std::string>& files_or_dirs, StaleCrl stale);
// The list files that names: each directory expanded to its regular files in name order.
std::vector<std::string> rim_crl_files(const std::vector<std::string>& files_or_dirs);

// The signing chain alone (verify_rim_signature's first step; rim_revocation.cpp).
ChainVerdict verify_rim_chain(const Rim& rim, const Certificate& rim_root,
                              std::optional<std::int64_t> at_unix_time, const RimCrls& crls);

// The RIM's XML signature (xmlsec1): the signer's chain leads to `rim_root` (validity checked at
// `at_unix_time`, default now), no certificate of it revoked by a list of `crls` (the refusal names the
// certificate and the list), the document has exactly one enveloped signature over the whole of it
// (Reference URI=""), and the signature verifies with the signer certificate's key. "ok" or why not.
ChainVerdict verify_rim_signature(const Rim& rim, const Certificate& rim_root,
                                  std::optional<std::int64_t> at_unix_time, const RimCrls& crls = {});

// What `crls` checked of the signing chains of `rims` (below `rim_root`), for verdicts and banners:
// "RIM signing chain not revoked (checked against N --gpu-rim-crl list(s))", or "RIM signing chain's
// revocation NOT checked (no --gpu-rim-crl)", or "... NOT checked for 'SUBJECT' (no --gpu-rim-crl
// issued by 'ISSUER')" naming each certificate no list covers; then the expired lists accepted (Note
// [Expired collateral wording] in tee/evidence/crl_currency.h).
std::string rim_revocation_text(const std::vector<Rim>& rims, const Certificate& rim_root,
                                const RimCrls& crls, std::optional<std::int64_t> at_unix_time);

struct MeasurementMismatch {
  int index = 0;                     // RIM index
  std::string rim;                   // which RIM's golden value it fails
  std::vector<std::uint8_t> actual;  // empty when the evidence has no such measurement
};

struct GoldenComparison {
  std::size_t compared = 0;  // active golden values compared
  std::vector<int> skipped;  // active indices not compared (Note [RIM index])
  std::vector<MeasurementMismatch> mismatches;
};

// Compares every active golden value of `rims` with `runtime` (RIM index -> measured value), skipping
// `skip`. Two RIMs with an active value at the same index are a configuration error (InputError).
GoldenComparison compare_golden(const std::vector<Rim>& rims,
                                const std::map<int, std::vector<std::uint8_t>>& runtime,
                                const std::set<int>& skip);

}  // namespace tt::tee::evidence
