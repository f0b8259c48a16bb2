#include "tee/evidence/tdx_tcb_info.h"

#include <openssl/objects.h>
#include <openssl/x509.h>

#include <algorithm>
#include <memory>

#include "base/error.h"
#include "base/hex.h"
#include "tee/bytes.h"

namespace tt::tee::evidence {
namespace {

using Json = nlohmann::json;

struct StatusName {
  TcbStatus status;
  const char* name;
};
constexpr StatusName kStatusNames[] = {
    {TcbStatus::UpToDate, "UpToDate"},
    {TcbStatus::SWHardeningNeeded, "SWHardeningNeeded"},
    {TcbStatus::ConfigurationNeeded, "ConfigurationNeeded"},
    {TcbStatus::ConfigurationAndSWHardeningNeeded, "ConfigurationAndSWHardeningNeeded"},
    {TcbStatus::OutOfDate, "OutOfDate"},
    {TcbStatus::OutOfDateConfigurationNeeded, "OutOfDateConfigurationNeeded"},
    {TcbStatus::Revoked, "Revoked"},
};

// 16 {"svn": N} objects, N in 0..255.
TcbComponents read_components(const Json& tcb, const char* key, const std::string& what) {
  const auto it = tcb.find(key);
  if (it == tcb.end() || !it->is_array() || it->size() != kTcbComponents)
    throw InputError(what + ": a TCB level's \"" + key + "\" is not a list of 16 components");
  TcbComponents out{};
  for (std::size_t i = 0; i < kTcbComponents; ++i) {
    const Json& c = (*it)[i];
    if (!c.is_object() || !c.contains("svn") || !c["svn"].is_number_unsigned() ||
        c["svn"].get<std::uint64_t>() > 255)
      throw InputError(what + ": \"" + key + "\"[" + std::to_string(i) + "] has no \"svn\" from 0 to 255");
    out[i] = static_cast<std::uint8_t>(c["svn"].get<std::uint64_t>());
  }
  return out;
}

TcbLevel read_level(const Json& l, const std::string& what) {
  if (!l.is_object() || !l.contains("tcb") || !l["tcb"].is_object() || !l.contains("tcbStatus") ||
      !l["tcbStatus"].is_string())
    throw InputError(what + ": a TCB level without \"tcb\": {...} and \"tcbStatus\"");
  const Json& tcb = l["tcb"];
  if (!tcb.contains("pcesvn") || !tcb["pcesvn"].is_number_unsigned() ||
      tcb["pcesvn"].get<std::uint64_t>() > 0xffff)
    throw InputError(what + ": a TCB level without \"pcesvn\" from 0 to 65535");
  const std::string status = l["tcbStatus"].get<std::string>();
  const std::optional<TcbStatus> s = tcb_status_of(status);
  if (!s) throw InputError(what + ": unknown tcbStatus \"" + status.substr(0, 40) + "\"");
  return {.sgx = read_components(tcb, "sgxtcbcomponents", what),
          .pcesvn = static_cast<std::uint16_t>(tcb["pcesvn"].get<std::uint64_t>()),
          .tdx = read_components(tcb, "tdxtcbcomponents", what),
          .tcb_date = l.contains("tcbDate") && l["tcbDate"].is_string()
                          ? l["tcbDate"].get<std::string>().substr(0, 32)
                          : std::string("(no date)"),
          .status = *s};
}

// One DER element: its tag and contents; `in` advances past it. nullopt when malformed.
struct Der {
  std::uint8_t tag = 0;
  ByteView value;
};
std::optional<Der> read_der(ByteView& in) {
  if (in.size() < 2) return std::nullopt;
  const std::uint8_t tag = in[0];
  std::size_t len = in[1], at = 2;
  if (len & 0x80) {
    const std::size_t n = len & 0x7f;
    if (n == 0 || n > 2 || in.size() < 2 + n) return std::nullopt;
    len = 0;
    for (std::size_t i = 0; i < n; ++i) len = (len << 8) | in[2 + i];
    at = 2 + n;
  }
  if (in.size() - at < len) return std::nullopt;
  const Der d{tag, in.subspan(at, len)};
  in = in.subspan(at + len);
  return d;
}

// The contents of Intel's SGX OIDs: 1.2.840.113741.1.13.1, then the arc below it.
constexpr std::uint8_t kSgxArc[] = {0x2a, 0x86, 0x48, 0x86, 0xf8, 0x4d, 0x01, 0x0d, 0x01};
constexpr std::uint8_t kDerSequence = 0x30, kDerOid = 0x06, kDerInteger = 0x02, kDerOctets = 0x04;

// The arc below the SGX arc that `oid` names (e.g. {2, 17} for PCESVN); empty when it is not under it.
std::vector<std::uint8_t> sgx_arc_of(ByteView oid) {
  if (oid.size() <= sizeof kSgxArc || !std::equal(std::begin(kSgxArc), std::end(kSgxArc), oid.begin()))
    return {};
  return {oid.begin() + sizeof kSgxArc, oid.end()};
}

// Every SEQUENCE { OID, value } in `seq`: the OID's arc below the SGX arc, and the value.
std::vector<std::pair<std::vector<std::uint8_t>, Der>> sgx_entries(ByteView seq) {
  std::vector<std::pair<std::vector<std::uint8_t>, Der>> out;
  while (!seq.empty()) {
    const std::optional<Der> entry = read_der(seq);
    if (!entry || entry->tag != kDerSequence)
      throw IntegrityError("the PCK certificate's SGX extensions are malformed");
    ByteView inner = entry->value;
    const std::optional<Der> oid = read_der(inner);
    const std::optional<Der> value = read_der(inner);
    if (!oid || oid->tag != kDerOid || !value)
      throw IntegrityError("the PCK certificate's SGX extensions are malformed");
    out.emplace_back(sgx_arc_of(oid->value), *value);
  }
  return out;
}

std::uint32_t der_unsigned(const Der& d) {
  if (d.tag != kDerInteger || d.value.empty() || d.value.size() > 3)
    throw IntegrityError("the PCK certificate's SGX TCB holds a component that is not a small INTEGER");
  std::uint32_t v = 0;
  for (std::uint8_t b : d.value) v = (v << 8) | b;
  return v;
}

// TCB: SEQUENCE { {.2.1, svn} .. {.2.16, svn}, {.2.17, pcesvn}, {.2.18, cpusvn} }.
void read_pck_components(ByteView tcb, PckTcb& out, int& found) {
  for (const auto& [arc, value] : sgx_entries(tcb)) {
    if (arc.size() != 2 || arc[0] != 2) continue;
    if (arc[1] >= 1 && arc[1] <= kTcbComponents) {
      out.sgx[arc[1] - 1] = static_cast<std::uint8_t>(der_unsigned(value) & 0xff);
      ++found;
    } else if (arc[1] == 17) {
      out.pcesvn = static_cast<std::uint16_t>(der_unsigned(value) & 0xffff);
      ++found;
    }
  }
}

bool reaches(ByteView have, ByteView level, std::size_t from) {
  for (std::size_t i = from; i < kTcbComponents; ++i)
    if (have[i] < level[i]) return false;
  return true;
}

CheckOutcome check_status(const TcbInfo& info, const TdxQuote& quote, TcbStatus lowest_accepted,
                          const TdxModuleMatch& module) {
  PckTcb pck;
  try {
    pck = read_pck_tcb(quote.pck_chain.front());
  } catch (const IntegrityError& e) {
    return {Check::TcbStatus, false, e.what()};
  }
  if (!std::equal(pck.fmspc.begin(), pck.fmspc.end(), info.fmspc.begin()))
    return {Check::TcbStatus, false,
            "the TCB info is for FMSPC " + to_hex(info.fmspc) + ", the PCK certificate's platform is FMSPC " +
                to_hex(pck.fmspc) + ": fetch the TCB info for fmspc=" + to_hex(pck.fmspc)};
  const ByteView svn = quote.body().subspan(0, kTcbComponents);
  const TcbLevel* level = select_tcb_level(info, pck, svn);
  if (level == nullptr)
    return {Check::TcbStatus, false,
            "the platform (SGX TCB " + to_hex(pck.sgx) + ", PCESVN " + std::to_string(pck.pcesvn) +
                ", TEE_TCB_SVN " + to_hex(svn) + ") is below every TCB level of FMSPC " + to_hex(info.fmspc)};
  const TcbStatus status = module.status ? combine_with_module(level->status, *module.status) : level->status;
  const bool ok = status != TcbStatus::Revoked && status <= lowest_accepted;
  const std::string combined =
      status != level->status ? std::string(", combined with the TDX module's: ") + tcb_status_name(status)
                              : "";
  const std::string refusal = ok ? ""
                                 : std::string(" (refused: the lowest status accepted is ") +
                                       tcb_status_name(lowest_accepted) +
                                       (status == TcbStatus::Revoked ? "; Revoked never is)" : ")");
  return {Check::TcbStatus, ok,
          std::string("FMSPC ") + to_hex(info.fmspc) + ", TCB level of " + level->tcb_date + ": " +
              tcb_status_name(level->status) + combined + refusal +
              (module.said.empty() ? "" : "; TDX module: " + module.said)};
}

}  // namespace

const char* tcb_status_name(TcbStatus status) {
  for (const StatusName& s : kStatusNames)
    if (s.status == status) return s.name;
  return "?";
}

std::optional<TcbStatus> tcb_status_of(std::string_view name) {
  for (const StatusName& s : kStatusNames)
    if (name == s.name) return s.status;
  return std::nullopt;
}

TcbInfo parse_tcb_info(std::string_view json, const std::string& where) {
  const std::string what = where + ": TCB info";
  const Json doc = parse_untrusted_json(json);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("tcbInfo") || !doc["tcbInfo"].is_object())
    throw InputError(what + ": not Intel's TCB info JSON ({\"tcbInfo\": {...}, \"signature\": HEX})");
  const Json& body = doc["tcbInfo"];
  if (!body.contains("id") || body["id"] != "TDX")
    throw InputError(what +
                     ": not a TDX TCB info (\"id\" is not \"TDX\"): fetch it from Intel PCS's "
                     "tdx/certification/v4/tcb, not sgx/");
  TcbInfo info{.signed_part = read_signed_collateral(json, doc, "tcbInfo", "TCB info", where),
               .fmspc = {},
               .levels = {},
               .tdx_module = {},
               .module_identities = std::nullopt};
  const std::vector<std::uint8_t> fmspc = collateral_hex_field(body, "fmspc", 6, what);
  std::copy(fmspc.begin(), fmspc.end(), info.fmspc.begin());
  const auto levels = body.find("tcbLevels");
  if (levels == body.end() || !levels->is_array() || levels->empty() || levels->size() > 256)
    throw InputError(what + ": \"tcbLevels\" is not a list of 1 to 256 levels");
  for (const Json& l : *levels) info.levels.push_back(read_level(l, what));
  read_tdx_modules(body, what, info);
  return info;
}

PckTcb read_pck_tcb(const Certificate& pck_leaf) {
  const std::unique_ptr<ASN1_OBJECT, decltype(&ASN1_OBJECT_free)> oid(OBJ_txt2obj("1.2.840.113741.1.13.1", 1),
                                                                      &ASN1_OBJECT_free);
  const int at = oid ? X509_get_ext_by_OBJ(pck_leaf.native(), oid.get(), -1) : -1;
  if (at < 0) throw IntegrityError("the PCK certificate has no SGX extensions (OID 1.2.840.113741.1.13.1)");
  const ASN1_OCTET_STRING* data = X509_EXTENSION_get_data(X509_get_ext(pck_leaf.native(), at));
  ByteView der(ASN1_STRING_get0_data(data), static_cast<std::size_t>(ASN1_STRING_length(data)));
  const std::optional<Der> top = read_der(der);
  if (!top || top->tag != kDerSequence)
    throw IntegrityError("the PCK certificate's SGX extensions are malformed");
  PckTcb out;
  int components = 0;
  bool fmspc = false;
  for (const auto& [arc, value] : sgx_entries(top->value)) {
    if (arc == std::vector<std::uint8_t>{2} && value.tag == kDerSequence)
      read_pck_components(value.value, out, components);
    if (arc == std::vector<std::uint8_t>{4} && value.tag == kDerOctets && value.value.size() == 6) {
      std::copy(value.value.begin(), value.value.end(), out.fmspc.begin());
      fmspc = true;
    }
  }
  if (!fmspc || components != static_cast<int>(kTcbComponents) + 1)
    throw IntegrityError(
        "the PCK certificate's SGX extensions lack the FMSPC or the 16 TCB components and PCESVN");
  return out;
}

const TcbLevel* select_tcb_level(const TcbInfo& info, const PckTcb& pck, ByteView tee_tcb_svn) {
  // Bytes 0 and 1 of TEE_TCB_SVN are the TDX module's version when byte 1 (its major version) is set:
  // Intel's library then compares from byte 2 (Note [TDX module identity]).
  const std::size_t from = tee_tcb_svn[1] != 0 ? 2 : 0;
  for (const TcbLevel& level : info.levels)
    if (reaches(pck.sgx, level.sgx, 0) && pck.pcesvn >= level.pcesvn && reaches(tee_tcb_svn, level.tdx, from))
      return &level;
  return nullptr;
}

std::vector<CheckOutcome> verify_tcb_info(const TcbInfo& info, const std::vector<Certificate>& issuer_chain,
                                          const TdxQuote& quote, const Certificate& intel_root,
                                          std::optional<std::int64_t> at_unix_time, StaleCollateral stale,
                                          TcbStatus lowest_accepted) {
  const TdxModuleMatch module = check_tdx_module(info, quote);
  return {check_signed_collateral(info.signed_part, issuer_chain, intel_root, at_unix_time, stale),
          module.outcome, check_status(info, quote, lowest_accepted, module)};
}

}  // namespace tt::tee::evidence
