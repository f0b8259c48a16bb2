// The TDX module's identity in Intel's TCB info (Note [TDX module identity], tdx_tcb_info.h).
#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/hex.h"
#include "tee/bytes.h"
#include "tee/evidence/tdx_quote.h"
#include "tee/evidence/tdx_tcb_info.h"

namespace tt::tee::evidence {
namespace {

using Json = nlohmann::json;

// The TD quote body's fields the module check reads (tdx_quote.cpp's table): TEE_TCB_SVN bytes 0 and 1,
// MRSIGNERSEAM (48 bytes at 64), SEAMATTRIBUTES (8 bytes at 112).
constexpr std::size_t kMrSignerSeamAt = 64, kSeamAttributesAt = 112;

template <std::size_t N>
void read_hex(const Json& o, const char* key, const std::string& what, std::array<std::uint8_t, N>& out) {
  const std::vector<std::uint8_t> bytes = collateral_hex_field(o, key, N, what);
  std::copy(bytes.begin(), bytes.end(), out.begin());
}

TdxModuleTcbLevel read_module_level(const Json& l, const std::string& what) {
  if (!l.is_object() || !l.contains("tcb") || !l["tcb"].is_object() || !l["tcb"].contains("isvsvn") ||
      !l["tcb"]["isvsvn"].is_number_unsigned() || l["tcb"]["isvsvn"].get<std::uint64_t>() > 255 ||
      !l.contains("tcbStatus") || !l["tcbStatus"].is_string())
    throw InputError(what +
                     ": a TDX module TCB level without \"tcb\": {\"isvsvn\": 0..255} and \"tcbStatus\"");
  const std::string status = l["tcbStatus"].get<std::string>();
  const std::optional<TcbStatus> s = tcb_status_of(status);
  if (!s) throw InputError(what + ": unknown TDX module tcbStatus \"" + status.substr(0, 40) + "\"");
  return {.isvsvn = static_cast<std::uint8_t>(l["tcb"]["isvsvn"].get<std::uint64_t>()),
          .tcb_date = l.contains("tcbDate") && l["tcbDate"].is_string()
                          ? l["tcbDate"].get<std::string>().substr(0, 32)
                          : std::string("(no date)"),
          .status = *s};
}

TdxModuleIdentity read_module(const Json& m, const std::string& id, const std::string& what) {
  if (!m.is_object()) throw InputError(what + ": \"" + id + "\" is not an object");
  TdxModuleIdentity out{.id = id, .mrsigner = {}, .attributes = {}, .attributes_mask = {}, .levels = {}};
  read_hex(m, "mrsigner", what + " " + id, out.mrsigner);
  read_hex(m, "attributes", what + " " + id, out.attributes);
  read_hex(m, "attributesMask", what + " " + id, out.attributes_mask);
  return out;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// "TDX_01" for major version 1, as Intel's library names the identity it looks for.
std::string identity_id(std::uint8_t major) {
  char id[8];
  std::snprintf(id, sizeof id, "TDX_%02X", major);
  return id;
}

// The signer and attributes: equal, and equal under the mask. Empty when they match, else the refusal.
std::string identity_mismatch(const TdxModuleIdentity& m, ByteView body) {
  const ByteView signer = body.subspan(kMrSignerSeamAt, m.mrsigner.size());
  if (!std::equal(signer.begin(), signer.end(), m.mrsigner.begin()))
    return "the quote's MRSIGNERSEAM " + short_hex(to_hex(signer), 16) + " is not the TDX module signer " +
           short_hex(to_hex(m.mrsigner), 16) + " of the TCB info's " + m.id +
           ": another party's SEAM module built this TD";
  const ByteView attributes = body.subspan(kSeamAttributesAt, m.attributes.size());
  for (std::size_t i = 0; i < m.attributes.size(); ++i)
    if ((attributes[i] & m.attributes_mask[i]) != (m.attributes[i] & m.attributes_mask[i]))
      return "the quote's SEAMATTRIBUTES " + to_hex(attributes) + " are not the TCB info's " + m.id +
             " attributes " + to_hex(m.attributes) + " under its mask " + to_hex(m.attributes_mask);
  return {};
}

TdxModuleMatch refused(std::string why) {
  return {.outcome = {Check::TdxModule, false, std::move(why)}, .status = std::nullopt, .said = ""};
}

}  // namespace

void read_tdx_modules(const Json& body, const std::string& what, TcbInfo& info) {
  if (!body.contains("tdxModule"))
    throw InputError(what +
                     ": no \"tdxModule\" (Intel's TDX TCB info, version 3, has one): fetch it from "
                     "Intel PCS's tdx/certification/v4/tcb");
  info.tdx_module = read_module(body["tdxModule"], "tdxModule", what);
  const auto ids = body.find("tdxModuleIdentities");
  if (ids == body.end()) return;
  if (!ids->is_array() || ids->size() > 256)
    throw InputError(what + ": \"tdxModuleIdentities\" is not a list of at most 256 identities");
  info.module_identities.emplace();
  for (const Json& m : *ids) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string())
      throw InputError(what + ": a TDX module identity without \"id\"");
    TdxModuleIdentity identity = read_module(m, upper(m["id"].get<std::string>().substr(0, 16)), what);
    const auto levels = m.find("tcbLevels");
    if (levels == m.end() || !levels->is_array() || levels->empty() || levels->size() > 256)
      throw InputError(what + ": TDX module identity " + identity.id +
                       "'s \"tcbLevels\" is not 1 to 256 levels");
    for (const Json& l : *levels) identity.levels.push_back(read_module_level(l, what + " " + identity.id));
    info.module_identities->push_back(std::move(identity));
  }
}

TdxModuleMatch check_tdx_module(const TcbInfo& info, const TdxQuote& quote) {
  const ByteView body = quote.body();
  const std::uint8_t isvsvn = body[0], major = body[1];
  // Major version 0, or no identities in the file: tdxModule's signer and attributes, no module level.
  if (major == 0 || !info.module_identities) {
    if (std::string why = identity_mismatch(info.tdx_module, body); !why.empty()) return refused(why);
    const std::string said =
        major == 0 ? "tdxModule's signer and attributes (major version 0: no module TCB level)"
                   : "tdxModule's signer and attributes; its TCB level NOT checked (the TCB info has no "
                     "tdxModuleIdentities)";
    return {.outcome = {Check::TdxModule, true, said}, .status = std::nullopt, .said = said};
  }
  const std::string id = identity_id(major);
  const auto& ids = *info.module_identities;
  const auto m = std::find_if(ids.begin(), ids.end(), [&](const TdxModuleIdentity& i) { return i.id == id; });
  if (m == ids.end())
    return refused("the TCB info has no TDX module identity " + id +
                   " for the quote's module (major version " + std::to_string(major) +
                   ", TEE_TCB_SVN byte 1)");
  if (std::string why = identity_mismatch(*m, body); !why.empty()) return refused(why);
  const auto level = std::find_if(m->levels.begin(), m->levels.end(),
                                  [&](const TdxModuleTcbLevel& l) { return isvsvn >= l.isvsvn; });
  if (level == m->levels.end())
    return refused("the TDX module's ISVSVN " + std::to_string(isvsvn) + " is below every TCB level of " +
                   id);
  const std::string said = id + "'s signer and attributes, ISVSVN " + std::to_string(isvsvn) +
                           " at TCB level of " + level->tcb_date + ": " + tcb_status_name(level->status);
  return {.outcome = {Check::TdxModule, true, said}, .status = level->status, .said = said};
}

TcbStatus combine_with_module(TcbStatus platform, TcbStatus module) {
  if (module == TcbStatus::Revoked) return TcbStatus::Revoked;
  if (module == TcbStatus::OutOfDate) {
    if (platform == TcbStatus::UpToDate || platform == TcbStatus::SWHardeningNeeded)
      return TcbStatus::OutOfDate;
    if (platform == TcbStatus::ConfigurationNeeded ||
        platform == TcbStatus::ConfigurationAndSWHardeningNeeded)
      return TcbStatus::OutOfDateConfigurationNeeded;
  }
  return platform;
}

}  // namespace tt::tee::evidence
