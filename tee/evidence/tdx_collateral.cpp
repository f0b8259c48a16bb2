#include "tee/evidence/tdx_collateral.h"

#include <openssl/x509.h>

#include <ctime>

#include "base/error.h"
#include "base/hex.h"
#include "base/untrusted_json.h"
#include "tee/evidence/ecdsa.h"

namespace tt::tee::evidence {
namespace {

using Json = nlohmann::json;

// The text of the JSON object that follows `"key":` in `json`, braces matched outside strings; empty
// when there is none.
std::string raw_object(std::string_view json, std::string_view key) {
  std::string quoted(1, '"');  // appended, not concatenated: GCC 12's -Wrestrict misfires on the latter
  quoted.append(key).push_back('"');
  const std::size_t at = json.find(quoted);
  if (at == std::string_view::npos) return {};
  const std::size_t open = json.find('{', at);
  if (open == std::string_view::npos) return {};
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = open; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      escaped = !escaped && c == '\\';
      if (!escaped && c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{') ++depth;
    if (c == '}' && --depth == 0) return std::string(json.substr(open, i - open + 1));
  }
  return {};
}

std::int64_t unix_time(const std::string& iso, const std::string& what) {
  // Intel writes UTC as "2023-07-18T08:42:58Z".
  std::tm tm{};
  const char* end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || (*end != 'Z' && *end != '\0'))
    throw InputError(what + ": \"nextUpdate\" is not a time YYYY-MM-DDTHH:MM:SSZ");
  return static_cast<std::int64_t>(timegm(&tm));
}

void read_levels(const Json& body, QeIdentity& q, const std::string& what) {
  const auto levels = body.find("tcbLevels");
  if (levels == body.end() || !levels->is_array() || levels->empty() || levels->size() > 64)
    throw InputError(what + ": \"tcbLevels\" is not a list of 1 to 64 levels");
  for (const Json& l : *levels) {
    const Json* svn = l.is_object() && l.contains("tcb") && l["tcb"].is_object() ? &l["tcb"] : nullptr;
    if (svn == nullptr || !svn->contains("isvsvn") || !(*svn)["isvsvn"].is_number_unsigned() ||
        !l.contains("tcbStatus") || !l["tcbStatus"].is_string())
      throw InputError(what + ": a TCB level without \"tcb\": {\"isvsvn\": N} and \"tcbStatus\"");
    q.tcb_levels.emplace_back(static_cast<std::uint16_t>((*svn)["isvsvn"].get<std::uint64_t>() & 0xffff),
                              l["tcbStatus"].get<std::string>().substr(0, 32));
  }
}

bool masked_equal(ByteView a, ByteView b, ByteView mask) {
  for (std::size_t i = 0; i < mask.size() && i < a.size() && i < b.size(); ++i)
    if ((a[i] & mask[i]) != (b[i] & mask[i])) return false;
  return true;
}

CheckOutcome check_identity(const QeIdentity& q, const TdxQuote& quote) {
  const ByteView r(quote.qe_report);
  if (!equal_ct(r.subspan(128, 32), q.mrsigner) || load_le(r.subspan(256, 2)) != q.isvprodid)
    return {Check::QeIdentity, false,
            "the quoting enclave's MRSIGNER or ISVPRODID is not Intel's QE identity's"};
  if (!masked_equal(r.subspan(16, 4), q.miscselect, q.miscselect_mask) ||
      !masked_equal(r.subspan(48, 16), q.attributes, q.attributes_mask))
    return {Check::QeIdentity, false,
            "the quoting enclave's MISCSELECT or ATTRIBUTES differ under the identity's masks"};
  const std::uint16_t svn = static_cast<std::uint16_t>(load_le(r.subspan(258, 2)));
  for (const auto& [level, status] : q.tcb_levels)
    if (svn >= level) {
      const bool ok = status == "UpToDate";
      return {Check::QeIdentity, ok,
              "the quoting enclave's ISVSVN " + std::to_string(svn) + " is at TCB level " +
                  std::to_string(level) + ": " + status +
                  (ok ? "" : " (refused: only UpToDate is accepted)")};
    }
  return {Check::QeIdentity, false,
          "the quoting enclave's ISVSVN " + std::to_string(svn) + " is below every TCB level"};
}

}  // namespace

std::vector<std::uint8_t> collateral_hex_field(const Json& o, const char* key, std::size_t bytes,
                                               const std::string& what) {
  const auto it = o.find(key);
  std::string text = it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'F' ? c + 32 : c);
  if (!is_hex(text, 2 * bytes))
    throw InputError(what + ": \"" + key + "\" is not " + std::to_string(2 * bytes) + " hex digits");
  return from_hex(text);
}

SignedCollateral read_signed_collateral(std::string_view json, const Json& doc, const char* key,
                                        const std::string& kind, const std::string& where) {
  const std::string what = where + ": " + kind;
  const Json& body = doc[key];
  if (!body.contains("nextUpdate") || !body["nextUpdate"].is_string())
    throw InputError(what + ": no \"nextUpdate\"");
  SignedCollateral c{.kind = kind,
                     .source = where,
                     .signed_text = raw_object(json, key),
                     .signature = collateral_hex_field(doc, "signature", 64, what),
                     .next_update = body["nextUpdate"].get<std::string>().substr(0, 32),
                     .next_update_unix = 0};
  c.next_update_unix = unix_time(c.next_update, what);
  // The values read are the signed ones: a second "key" earlier in the file (inside a string, say) must
  // not let the signature cover one object while the checks read another.
  if (parse_untrusted_json(c.signed_text) != body)
    throw InputError(what + ": the signed \"" + key + "\" object is not the one the file holds");
  return c;
}

CheckOutcome check_signed_collateral(const SignedCollateral& c, const std::vector<Certificate>& chain,
                                     const Certificate& root, std::optional<std::int64_t> at,
                                     StaleCollateral stale) {
  const std::string the = "the " + c.kind;
  if (chain.empty()) return {Check::Collateral, false, "no issuer chain for " + the};
  const ChainVerdict v = verify_certificate_path(root, chain.front(), sent_chain_options(chain, {}, at));
  if (!v) return {Check::Collateral, false, the + "'s issuer chain: " + v.reason};
  if (!verify_ecdsa_raw(X509_get0_pubkey(chain.front().native()), Curve::P256, bytes_of(c.signed_text),
                        c.signature))
    return {Check::Collateral, false, the + "'s signature does not verify (altered?)"};
  const std::int64_t now = at.value_or(static_cast<std::int64_t>(std::time(nullptr)));
  if (now > c.next_update_unix && stale == StaleCollateral::Refuse)
    return {Check::Collateral, false,
            the + " '" + c.source + "' expired at its nextUpdate " + c.next_update +
                ": fetch a current one (or accept it explicitly with --allow-expired-collateral)"};
  return {Check::Collateral, true,
          c.kind + " signed by " + chain.front().subject() +
              (now > c.next_update_unix
                   ? "; EXPIRED at " + c.next_update + ", accepted by --allow-expired-collateral"
                   : "; current until " + c.next_update)};
}

QeIdentity parse_qe_identity(std::string_view json, const std::string& where) {
  const std::string what = where + ": QE identity";
  const Json doc = parse_untrusted_json(json);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("enclaveIdentity") ||
      !doc["enclaveIdentity"].is_object())
    throw InputError(what +
                     ": not Intel's QE identity JSON ({\"enclaveIdentity\": {...}, \"signature\": HEX})");
  QeIdentity q;
  q.signed_part = read_signed_collateral(json, doc, "enclaveIdentity", "QE identity", where);
  const Json& body = doc["enclaveIdentity"];
  q.id = body.contains("id") && body["id"].is_string() ? body["id"].get<std::string>().substr(0, 16) : "";
  q.miscselect = collateral_hex_field(body, "miscselect", 4, what);
  q.miscselect_mask = collateral_hex_field(body, "miscselectMask", 4, what);
  q.attributes = collateral_hex_field(body, "attributes", 16, what);
  q.attributes_mask = collateral_hex_field(body, "attributesMask", 16, what);
  q.mrsigner = collateral_hex_field(body, "mrsigner", 32, what);
  if (!body.contains("isvprodid") || !body["isvprodid"].is_number_unsigned())
    throw InputError(what + ": no \"isvprodid\"");
  q.isvprodid = static_cast<std::uint16_t>(body["isvprodid"].get<std::uint64_t>() & 0xffff);
  read_levels(body, q, what);
  return q;
}

std::vector<CheckOutcome> verify_qe_identity(const QeIdentity& identity,
                                             const std::vector<Certificate>& issuer_chain,
                                             const TdxQuote& quote, const Certificate& intel_root,
                                             std::optional<std::int64_t> at_unix_time,
                                             StaleCollateral stale) {
  return {check_signed_collateral(identity.signed_part, issuer_chain, intel_root, at_unix_time, stale),
          check_identity(identity, quote)};
}

}  // namespace tt::tee::evidence
