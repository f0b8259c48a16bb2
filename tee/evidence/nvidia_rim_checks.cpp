// The RIM checks of a GPU's evidence (tee/evidence/nvidia_verify.h): RIM signature, RIM version,
// measurements against golden values.
#include <algorithm>
#include <cctype>

#include "tee/evidence/crl_currency.h"
#include "tee/evidence/nvidia_verify.h"

namespace tt::tee::evidence {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

CheckOutcome check_versions(const GpuEvidence& gpu, const std::vector<Rim>& rims) {
  const std::string driver = driver_version(gpu.opaque).value_or("(none)");
  const std::string vbios = vbios_version(gpu.opaque).value_or("(none)");
  std::string matched;
  for (const Rim& rim : rims) {
    const std::string want = rim.is_vbios() ? vbios : driver;
    if (lower(rim.version) != lower(want))
      return {Check::RimVersion, false,
              rim.source + " is for " + (rim.is_vbios() ? "VBIOS " : "driver ") + rim.version +
                  ", this GPU reports " + (rim.is_vbios() ? "VBIOS " : "driver ") + want +
                  " (give the RIM of the version the GPU runs)"};
    if (!matched.empty()) matched += ", ";
    matched += rim.is_vbios() ? "VBIOS " : "driver ";
    matched += rim.version;
  }
  return {Check::RimVersion, true, "the RIMs are for this GPU's " + matched};
}

std::string index_list(const std::vector<MeasurementMismatch>& mismatches) {
  std::string out;
  for (const MeasurementMismatch& m : mismatches) {
    if (!out.empty()) out += ", ";
    out += std::to_string(m.index + 1);
  }
  return out;
}

}  // namespace

CheckOutcome check_rim_signature(const Rim& rim, const Certificate& rim_root,
                                 std::optional<std::int64_t> at_unix_time, const RimCrls& crls) {
  // An expired list first, naming it: the path check would refuse it in OpenSSL's words.
  if (crls.stale == StaleCrl::Refuse)
    if (std::optional<CheckOutcome> expired = expired_crl(crls.paths, crls.crls, at_unix_time))
      return *expired;
  const ChainVerdict v = verify_rim_signature(rim, rim_root, at_unix_time, crls);
  return {Check::RimSignature, v.ok, rim.source + ": " + v.reason};
}

std::vector<CheckOutcome> check_against_rims(const GpuEvidence& gpu, const std::vector<Rim>& rims,
                                             GoldenComparison& comparison) {
  std::map<int, std::vector<std::uint8_t>> runtime;
  for (const MeasurementBlock& b : gpu.transcript.response.blocks)
    runtime[b.index - 1] = b.value;  // Note [RIM index]
  std::set<int> skip;
  if (nvdec0_disabled(gpu.opaque)) skip.insert(35);
  comparison = compare_golden(rims, runtime, skip);
  CheckOutcome measurements{Check::Measurements, comparison.mismatches.empty(), ""};
  measurements.detail = comparison.mismatches.empty()
                            ? "all " + std::to_string(comparison.compared) + " golden values match"
                            : std::to_string(comparison.mismatches.size()) + " of " +
                                  std::to_string(comparison.compared) +
                                  " measurements differ from the RIMs' golden values: block(s) " +
                                  index_list(comparison.mismatches);
  return {check_versions(gpu, rims), measurements};
}

}  // namespace tt::tee::evidence
