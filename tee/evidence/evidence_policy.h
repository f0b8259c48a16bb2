// A verifier's policy of real measurements: which TDX, SEV-SNP and GPU measurements may run, read from
// a text file the operator writes from evidence they trust (`teetrain attestation-policy`) and edits.
//
// Note [Evidence policy]: verification (tdx_quote.h, snp_report.h, nvidia_verify.h) says who signed
// the evidence and that it is fresh; the policy says whether what it measured is what the verifier
// wants to run. The file, one field per line, `#` comments:
//
//   teetrain-evidence-policy 1          first line: the format and its version
//   tdx.mrtd = HEX96                    repeatable: any listed value is allowed (an upgrade lists both)
//   tdx.rtmr0 .. tdx.rtmr3 = HEX96      repeatable
//   tdx.debug = refuse | allow          TDATTRIBUTES bit 0; refused when absent
//   tdx.min_tee_tcb_svn = HEX32         each of the 16 SVN bytes at least this one's
//   tdx.min_tcb_status = STATUS         the lowest TCB status Intel's TCB info may give the platform
//                                       (tdx_tcb_info.h: UpToDate .. OutOfDateConfigurationNeeded;
//                                       ConfigurationAndSWHardeningNeeded when absent; Revoked never)
//   snp.measurement = HEX96             repeatable
//   snp.debug = refuse | allow          POLICY bit 19; refused when absent
//   snp.min_reported_tcb = HEX16        each TCB_VERSION byte (boot loader, TEE, SNP, microcode) at least
//   gpu.driver_version = TEXT           repeatable ("550.90.07")
//   gpu.vbios_version = TEXT            repeatable ("96.00.9e.00.01")
//   gpu.rim = TEXT                      repeatable: the tag ids of the RIMs the GPU was checked against
//
// A field the policy leaves out is not checked, and check_policy's caller lists it as such
// (unconstrained_fields): never silently. Debug is the exception: refused unless allowed.
// check_policy returns EVERY failing field, by name, not the first; policy_digest is SHA-256 of the
// file's canonical text (write_policy), the same for two files that differ only in comments, order or
// case of hex, which the summary and the ranks' agreement record.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tee/digest.h"
#include "tee/evidence/nvidia_evidence.h"
#include "tee/evidence/rim.h"
#include "tee/evidence/snp_report.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tdx_tcb_info.h"

namespace tt::tee::evidence {

enum class EvidenceKind { Tdx, Snp, Gpu };

enum class PolicyField {
  TdxMrtd,
  TdxRtmr0,
  TdxRtmr1,
  TdxRtmr2,
  TdxRtmr3,
  TdxDebug,
  TdxMinTeeTcbSvn,
  TdxMinTcbStatus,
  SnpMeasurement,
  SnpDebug,
  SnpMinReportedTcb,
  GpuDriverVersion,
  GpuVbiosVersion,
  GpuRim,
};
// "tdx.mrtd", "snp.debug", ...: the name in the file and in every failure.
const char* policy_field_name(PolicyField field);

// The allowed values of each field the policy constrains (canonical: lowercase hex, "refuse"/"allow").
struct EvidencePolicy {
  std::map<PolicyField, std::vector<std::string>> allowed;
};

// Far above a real policy (a few dozen lines).
inline constexpr std::size_t kMaxPolicyBytes = 64 * 1024;

// Throws InputError("<where>: line N: ...") naming the line and what is wrong (unknown field, with the
// closest name; bad value; a single-valued field twice; no header).
EvidencePolicy parse_policy(std::string_view text, const std::string& where);
EvidencePolicy load_policy(const std::filesystem::path& path);
// The canonical text: header, then the fields in PolicyField order, values sorted.
std::string write_policy(const EvidencePolicy& policy);
Sha256Digest policy_digest(const EvidencePolicy& policy);

// What one verified piece of evidence measured, field by field (the policy fields of its kind).
struct VerifiedMeasurements {
  EvidenceKind kind = EvidenceKind::Tdx;
  std::string source;  // for messages: the file, "rank 1's TDX quote"
  std::vector<std::pair<PolicyField, std::string>> values;
};
VerifiedMeasurements measurements_of(const TdxQuote& quote);
VerifiedMeasurements measurements_of(const SnpReport& report);
// `rims`: the RIMs the GPU's measurements were compared with (their tag ids); may be empty.
VerifiedMeasurements measurements_of(const GpuEvidence& gpu, const std::vector<Rim>& rims);

// Adds `measured`'s values to `policy` (debug: always "refuse", even from evidence that allows it: an
// operator who wants debug edits the file; minimums: the measured value, lowered to the smallest seen):
// what `attestation-policy` writes.
void add_to_policy(EvidencePolicy& policy, const VerifiedMeasurements& measured);

// The measurements of every piece of evidence in a file (a TDX quote, an SEV-SNP report, the NVIDIA
// SDK's JSON with one entry per GPU), read but NOT verified: for `attestation-policy`, from evidence
// the operator verified and trusts. InputError naming the file when it is none of these.
std::vector<VerifiedMeasurements> read_measurements(const std::filesystem::path& path,
                                                    const std::vector<Rim>& rims);

struct PolicyFailure {
  PolicyField field;
  std::string detail;  // "tdx.mrtd: 3d3d... is not one of the 2 values the policy allows"
};
// Every field of `measured` that the policy refuses; empty when it passes.
std::vector<PolicyFailure> check_policy(const EvidencePolicy& policy, const VerifiedMeasurements& measured);
// The lowest TCB status the policy accepts from Intel's TCB info (tdx.min_tcb_status, or the default).
TcbStatus lowest_tcb_status(const EvidencePolicy& policy);
// The fields of this kind the policy leaves out (not checked), by name.
std::vector<std::string> unconstrained_fields(const EvidencePolicy& policy, EvidenceKind kind);

}  // namespace tt::tee::evidence
