#include "tee/evidence/evidence_policy.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "base/hex.h"
#include "base/suggest.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

constexpr std::string_view kHeader = "teetrain-evidence-policy 1";
constexpr std::size_t kMaxTextValue = 128;

// LowestStatus: not a measurement but what Intel's TCB info may say of it (tdx_tcb_info.h), checked
// there; when absent the default applies, so it is never listed as unconstrained.
enum class Rule { OneOf, Debug, Minimum, LowestStatus };

struct FieldInfo {
  PolicyField field;
  const char* name;
  EvidenceKind kind;
  Rule rule;
  std::size_t hex_bytes;  // 0: a text value
};

// Note [Evidence policy]: every field, in the order the canonical text writes them.
constexpr std::array<FieldInfo, 14> kFields = {{
    {PolicyField::TdxMrtd, "tdx.mrtd", EvidenceKind::Tdx, Rule::OneOf, 48},
    {PolicyField::TdxRtmr0, "tdx.rtmr0", EvidenceKind::Tdx, Rule::OneOf, 48},
    {PolicyField::TdxRtmr1, "tdx.rtmr1", EvidenceKind::Tdx, Rule::OneOf, 48},
    {PolicyField::TdxRtmr2, "tdx.rtmr2", EvidenceKind::Tdx, Rule::OneOf, 48},
    {PolicyField::TdxRtmr3, "tdx.rtmr3", EvidenceKind::Tdx, Rule::OneOf, 48},
    {PolicyField::TdxDebug, "tdx.debug", EvidenceKind::Tdx, Rule::Debug, 0},
    {PolicyField::TdxMinTeeTcbSvn, "tdx.min_tee_tcb_svn", EvidenceKind::Tdx, Rule::Minimum, 16},
    {PolicyField::TdxMinTcbStatus, "tdx.min_tcb_status", EvidenceKind::Tdx, Rule::LowestStatus, 0},
    {PolicyField::SnpMeasurement, "snp.measurement", EvidenceKind::Snp, Rule::OneOf, 48},
    {PolicyField::SnpDebug, "snp.debug", EvidenceKind::Snp, Rule::Debug, 0},
    {PolicyField::SnpMinReportedTcb, "snp.min_reported_tcb", EvidenceKind::Snp, Rule::Minimum, 8},
    {PolicyField::GpuDriverVersion, "gpu.driver_version", EvidenceKind::Gpu, Rule::OneOf, 0},
    {PolicyField::GpuVbiosVersion, "gpu.vbios_version", EvidenceKind::Gpu, Rule::OneOf, 0},
    {PolicyField::GpuRim, "gpu.rim", EvidenceKind::Gpu, Rule::OneOf, 0},
}};

const FieldInfo& info(PolicyField field) {
  return *std::find_if(kFields.begin(), kFields.end(), [&](const FieldInfo& f) { return f.field == field; });
}

// Measured debug state (not a policy value): whether the evidence allows debug.
constexpr const char* kDebugOn = "on";
constexpr const char* kDebugOff = "off";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
  return out;
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// The canonical value of `raw` for `f`; throws InputError(`at` + why) when it is not one.
std::string canonical_value(const FieldInfo& f, std::string_view raw, const std::string& at) {
  if (f.rule == Rule::Debug) {
    if (raw == "refuse" || raw == "allow") return std::string(raw);
    throw InputError(at + f.name + " is '" + std::string(raw.substr(0, 32)) + "', expected refuse or allow");
  }
  if (f.rule == Rule::LowestStatus) {
    const std::optional<TcbStatus> s = tcb_status_of(raw);
    if (s && *s != TcbStatus::Revoked) return std::string(raw);
    throw InputError(at + f.name + " is '" + std::string(raw.substr(0, 40)) +
                     "', expected one of Intel's TCB statuses from UpToDate to OutOfDateConfigurationNeeded "
                     "(Revoked is never accepted)");
  }
  if (f.hex_bytes > 0) {
    std::string hex = lower(raw);
    if (!is_hex(hex, 2 * f.hex_bytes))
      throw InputError(at + f.name + " needs " + std::to_string(2 * f.hex_bytes) + " hex digits");
    return hex;
  }
  const bool printable = std::all_of(raw.begin(), raw.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (raw.empty() || raw.size() > kMaxTextValue || !printable)
    throw InputError(at + f.name + " needs a value of 1 to " + std::to_string(kMaxTextValue) +
                     " printable characters without spaces");
  return std::string(raw);
}

void add_line(EvidencePolicy& policy, std::string_view line, const std::string& at) {
  const auto eq = line.find('=');
  if (eq == std::string_view::npos) throw InputError(at + "expected FIELD = VALUE");
  const std::string name(trim(line.substr(0, eq)));
  const auto* f =
      std::find_if(kFields.begin(), kFields.end(), [&](const FieldInfo& x) { return name == x.name; });
  if (f == kFields.end()) {
    std::vector<std::string> names;
    for (const FieldInfo& x : kFields) names.emplace_back(x.name);
    const bool printable =
        std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    const std::string shown = printable ? name.substr(0, 64) : "(unprintable)";
    const std::optional<std::string> close = closest_match(shown, names);
    throw InputError(at + "unknown field '" + shown + "'" +
                     (close ? " (did you mean " + *close + "?)" : std::string()));
  }
  const std::string value = canonical_value(*f, trim(line.substr(eq + 1)), at);
  std::vector<std::string>& values = policy.allowed[f->field];
  if (f->rule != Rule::OneOf && !values.empty()) throw InputError(at + f->name + " is given twice");
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

std::string short_value(const std::string& v) {
  return v.size() > 24 ? short_hex(v, 16) : v;
}

// Each byte of `measured` at least `minimum`'s (both hex of the same length); the components below.
std::string below_minimum(const std::string& measured, const std::string& minimum) {
  const std::vector<std::uint8_t> m = from_hex(measured);
  const std::vector<std::uint8_t> floor = from_hex(minimum);
  std::string out;
  for (std::size_t i = 0; i < m.size() && i < floor.size(); ++i)
    if (m[i] < floor[i])
      out += (out.empty() ? "" : ", ") + std::string("byte ") + std::to_string(i) + " is " +
             std::to_string(m[i]) + " < " + std::to_string(floor[i]);
  return out;
}

std::optional<PolicyFailure> check_value(const EvidencePolicy& policy, PolicyField field,
                                         const std::string& value) {
  const FieldInfo& f = info(field);
  const auto it = policy.allowed.find(field);
  if (f.rule == Rule::Debug) {
    const bool allowed = it != policy.allowed.end() && it->second.front() == "allow";
    if (value == kDebugOn && !allowed)
      return PolicyFailure{field,
                           std::string(f.name) + ": the evidence allows DEBUG (" +
                               (field == PolicyField::TdxDebug ? "TDATTRIBUTES bit 0" : "POLICY bit 19") +
                               "): its memory is open to the host; the policy refuses debug"};
    return std::nullopt;
  }
  if (it == policy.allowed.end()) return std::nullopt;
  if (f.rule == Rule::Minimum) {
    const std::string below = below_minimum(value, it->second.front());
    if (below.empty()) return std::nullopt;
    return PolicyFailure{field, std::string(f.name) + ": " + value + " is below the policy's minimum " +
                                    it->second.front() + " (" + below + ")"};
  }
  if (std::find(it->second.begin(), it->second.end(), value) != it->second.end()) return std::nullopt;
  return PolicyFailure{field, std::string(f.name) + ": " + short_value(value) + " is not one of the " +
                                  std::to_string(it->second.size()) + " value(s) the policy allows"};
}

void add(VerifiedMeasurements& m, PolicyField field, ByteView bytes) {
  m.values.emplace_back(field, to_hex(bytes));
}

}  // namespace

const char* policy_field_name(PolicyField field) {
  return info(field).name;
}

EvidencePolicy parse_policy(std::string_view text, const std::string& where) {
  if (text.size() > kMaxPolicyBytes)
    throw InputError(where + ": larger than " + std::to_string(kMaxPolicyBytes) + " bytes: not a policy");
  EvidencePolicy policy;
  bool header = false;
  std::size_t number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::string at = where + ": line " + std::to_string(++number) + ": ";
    if (line.empty() || line.front() == '#') continue;
    if (!header) {
      if (line != kHeader)
        throw InputError(at + "expected '" + std::string(kHeader) +
                         "' first (write a policy with teetrain attestation-policy)");
      header = true;
      continue;
    }
    add_line(policy, line, at);
  }
  if (!header) throw InputError(where + ": empty: expected '" + std::string(kHeader) + "' first");
  return policy;
}

EvidencePolicy load_policy(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, "--policy", kMaxPolicyBytes);
  return parse_policy(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                      "--policy '" + printable_path(path) + "'");
}

std::string write_policy(const EvidencePolicy& policy) {
  std::string out = std::string(kHeader) + "\n";
  for (const FieldInfo& f : kFields) {
    const auto it = policy.allowed.find(f.field);
    if (it == policy.allowed.end()) continue;
    std::vector<std::string> values = it->second;
    std::sort(values.begin(), values.end());
    for (const std::string& v : values) out += std::string(f.name) + " = " + v + "\n";
  }
  return out;
}

Sha256Digest policy_digest(const EvidencePolicy& policy) {
  return sha256(std::string_view(write_policy(policy)));
}

VerifiedMeasurements measurements_of(const TdxQuote& q) {
  VerifiedMeasurements m{EvidenceKind::Tdx, q.source, {}};
  const ByteView body = q.body();
  add(m, PolicyField::TdxMrtd, body.subspan(136, 48));
  const std::array<PolicyField, 4> rtmrs = {PolicyField::TdxRtmr0, PolicyField::TdxRtmr1,
                                            PolicyField::TdxRtmr2, PolicyField::TdxRtmr3};
  for (std::size_t i = 0; i < rtmrs.size(); ++i) add(m, rtmrs[i], body.subspan(328 + 48 * i, 48));
  m.values.emplace_back(PolicyField::TdxDebug, (body[120] & 1U) != 0 ? kDebugOn : kDebugOff);
  add(m, PolicyField::TdxMinTeeTcbSvn, body.subspan(0, 16));
  return m;
}

VerifiedMeasurements measurements_of(const SnpReport& r) {
  VerifiedMeasurements m{EvidenceKind::Snp, r.source, {}};
  add(m, PolicyField::SnpMeasurement, r.measurement());
  m.values.emplace_back(PolicyField::SnpDebug, r.debug_allowed() ? kDebugOn : kDebugOff);
  add(m, PolicyField::SnpMinReportedTcb, r.field(0x180, 8));
  return m;
}

VerifiedMeasurements measurements_of(const GpuEvidence& gpu, const std::vector<Rim>& rims) {
  VerifiedMeasurements m{EvidenceKind::Gpu, gpu.source, {}};
  if (const auto v = driver_version(gpu.opaque)) m.values.emplace_back(PolicyField::GpuDriverVersion, *v);
  if (const auto v = vbios_version(gpu.opaque))
    m.values.emplace_back(PolicyField::GpuVbiosVersion, lower(*v));
  for (const Rim& rim : rims) m.values.emplace_back(PolicyField::GpuRim, rim.tag_id);
  return m;
}

void add_to_policy(EvidencePolicy& policy, const VerifiedMeasurements& measured) {
  for (const auto& [field, value] : measured.values) {
    std::vector<std::string>& values = policy.allowed[field];
    const Rule rule = info(field).rule;
    if (rule == Rule::Debug) {
      values = {"refuse"};
    } else if (rule == Rule::Minimum) {
      if (values.empty()) values = {value};
      std::vector<std::uint8_t> floor = from_hex(values.front());
      const std::vector<std::uint8_t> m = from_hex(value);
      for (std::size_t i = 0; i < floor.size() && i < m.size(); ++i) floor[i] = std::min(floor[i], m[i]);
      values = {to_hex(floor)};
    } else if (std::find(values.begin(), values.end(), value) == values.end()) {
      values.push_back(value);
    }
  }
}

std::vector<VerifiedMeasurements> read_measurements(const std::filesystem::path& path,
                                                    const std::vector<Rim>& rims) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, "--from", kMaxEvidenceFileBytes);
  const std::string where = printable_path(path);
  if (looks_like_snp_report(bytes)) return {measurements_of(parse_snp_report(bytes, where))};
  if (looks_like_tdx_quote(bytes)) return {measurements_of(parse_tdx_quote(bytes, where))};
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!looks_like_json(text))
    throw InputError("--from '" + where +
                     "': neither a TDX quote, an SEV-SNP report nor the NVIDIA attestation SDK's JSON");
  std::vector<VerifiedMeasurements> out;
  for (const GpuEvidence& gpu : parse_sdk_evidence_json(text, where))
    out.push_back(measurements_of(gpu, rims));
  return out;
}

std::vector<PolicyFailure> check_policy(const EvidencePolicy& policy, const VerifiedMeasurements& measured) {
  std::vector<PolicyFailure> failures;
  for (const auto& [field, value] : measured.values)
    if (std::optional<PolicyFailure> f = check_value(policy, field, value)) failures.push_back(std::move(*f));
  for (const FieldInfo& f : kFields) {  // constrained, but the evidence does not say
    const bool measured_it = std::any_of(measured.values.begin(), measured.values.end(),
                                         [&](const auto& v) { return v.first == f.field; });
    if (f.kind == measured.kind && !measured_it && policy.allowed.count(f.field) > 0 &&
        f.rule != Rule::Debug && f.rule != Rule::LowestStatus)
      failures.push_back({f.field, std::string(f.name) + ": the evidence does not state it (" +
                                       (f.field == PolicyField::GpuRim ? "no RIM was checked: give --rim"
                                                                       : "no such field") +
                                       "), the policy constrains it"});
  }
  return failures;
}

TcbStatus lowest_tcb_status(const EvidencePolicy& policy) {
  const auto it = policy.allowed.find(PolicyField::TdxMinTcbStatus);
  return it == policy.allowed.end() ? kDefaultLowestTcbStatus
                                    : tcb_status_of(it->second.front()).value_or(kDefaultLowestTcbStatus);
}

std::vector<std::string> unconstrained_fields(const EvidencePolicy& policy, EvidenceKind kind) {
  std::vector<std::string> out;
  for (const FieldInfo& f : kFields)
    if (f.kind == kind && f.rule != Rule::Debug && f.rule != Rule::LowestStatus &&
        policy.allowed.count(f.field) == 0)
      out.emplace_back(f.name);
  return out;
}

}  // namespace tt::tee::evidence
