#include "comm/adversary/adversary_spec.h"

#include <charconv>
#include <climits>
#include <vector>

#include "base/error.h"

namespace tt::comm {

const char* attack_name(AttackKind k) {
  switch (k) {
    case AttackKind::Snoop:
      return "snoop";
    case AttackKind::Flip:
      return "flip";
    case AttackKind::Drop:
      return "drop";
    case AttackKind::Replay:
      return "replay";
    case AttackKind::Reorder:
      return "reorder";
    case AttackKind::Truncate:
      return "truncate";
    case AttackKind::Delay:
      return "delay";
    case AttackKind::Rewrite:
      return "rewrite";
    case AttackKind::Mitm:
      return "mitm";
    case AttackKind::MitmRelay:
      return "mitm-relay";
    case AttackKind::Oversize:
      return "oversize";
    case AttackKind::StaleNonce:
      return "stale-nonce";
    case AttackKind::SubstituteKey:
      return "substitute-key";
    case AttackKind::Reflect:
      return "reflect";
    case AttackKind::Relay:
      return "relay";
  }
  return "unknown";
}

bool attacks_handshake(AttackKind k) {
  return k == AttackKind::Mitm || k == AttackKind::MitmRelay || k == AttackKind::Oversize ||
         is_evidence_attack(k);
}

bool is_evidence_attack(AttackKind k) {
  return k == AttackKind::StaleNonce || k == AttackKind::SubstituteKey || k == AttackKind::Reflect ||
         k == AttackKind::Relay;
}

namespace {

constexpr const char* kForms =
    "snoop[:DIR], flip:N, drop:N, replay:N, reorder:N, truncate:N, delay:N:MS, rewrite:N[:fit], mitm[:cert], "
    "oversize[:BYTES], mitm-relay, stale-nonce, substitute-key, reflect or relay, "
    "each optionally followed by @RANK (the link from that rank; default @0)";

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throw InputError("--adversary " + std::string(spec) + ": " + why + "; use " + kForms);
}

long number(std::string_view spec, std::string_view field, const char* what, long min) {
  long v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size())
    bad(spec, std::string(what) + " '" + std::string(field) + "' is not a number");
  if (v < min) bad(spec, std::string(what) + " must be at least " + std::to_string(min));
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::optional<AttackKind> kind_named(std::string_view name) {
  for (AttackKind k : {AttackKind::Snoop, AttackKind::Flip, AttackKind::Drop, AttackKind::Replay,
                       AttackKind::Reorder, AttackKind::Truncate, AttackKind::Delay, AttackKind::Rewrite,
                       AttackKind::Mitm, AttackKind::MitmRelay, AttackKind::Oversize, AttackKind::StaleNonce,
                       AttackKind::SubstituteKey, AttackKind::Reflect, AttackKind::Relay}) {
    if (name == attack_name(k)) return k;
  }
  return std::nullopt;
}

}  // namespace

AdversarySpec parse_adversary(std::string_view spec) {
  AdversarySpec a;
  std::string_view body = spec;
  // snoop:DIR may name a directory with '@' in it: only the active attacks take @RANK.
  if (!spec.starts_with("snoop")) {
    if (const std::size_t at = spec.rfind('@'); at != std::string_view::npos) {
      a.link = static_cast<int>(number(spec, spec.substr(at + 1), "rank", 0));
      body = spec.substr(0, at);
    }
  }
  const std::vector<std::string_view> f = split(body, ':');
  const auto kind = kind_named(f[0]);
  if (!kind) bad(spec, "unknown attack '" + std::string(f[0]) + "'");
  a.kind = *kind;
  switch (a.kind) {
    case AttackKind::Snoop:
      if (f.size() > 1) a.snoop_dir = std::string(body.substr(f[0].size() + 1));
      if (f.size() > 1 && a.snoop_dir.empty()) bad(spec, "snoop: names an empty directory");
      return a;
    case AttackKind::Mitm:
      if (f.size() > 2 || (f.size() == 2 && f[1] != "cert")) bad(spec, "mitm takes only ':cert'");
      if (f.size() == 2) a.forgery = MitmForgery::StolenCertificate;
      return a;
    case AttackKind::MitmRelay:
    case AttackKind::StaleNonce:
    case AttackKind::SubstituteKey:
    case AttackKind::Reflect:
    case AttackKind::Relay:
      if (f.size() > 1) bad(spec, std::string(attack_name(a.kind)) + " takes no arguments");
      return a;
    case AttackKind::Oversize:
      if (f.size() > 2) bad(spec, "oversize takes only the message's size in bytes (oversize:BYTES)");
      // At most MPI's int count: a message no transport could send is no attack.
      if (f.size() == 2) a.oversize_bytes = static_cast<std::size_t>(number(spec, f[1], "size", 1));
      if (a.oversize_bytes > static_cast<std::size_t>(INT_MAX)) bad(spec, "size must be at most 2147483647");
      return a;
    case AttackKind::Delay:
      if (f.size() != 3) bad(spec, "delay needs the message and the milliseconds (delay:N:MS)");
      a.delay = std::chrono::milliseconds(number(spec, f[2], "delay", 1));
      break;
    case AttackKind::Rewrite:
      if (f.size() == 3 && f[2] != "fit") bad(spec, "rewrite takes only ':fit' after N (rewrite:N:fit)");
      if (f.size() < 2 || f.size() > 3) bad(spec, "rewrite needs the message number N (rewrite:N[:fit])");
      a.fit = f.size() == 3;
      break;
    default:
      if (f.size() != 2) bad(spec, std::string(attack_name(a.kind)) + " needs the message number N");
  }
  const bool needs_previous = a.kind == AttackKind::Replay || a.kind == AttackKind::Rewrite;
  a.nth = static_cast<std::size_t>(number(spec, f[1], "message number", needs_previous ? 2 : 1));
  return a;
}

void check_adversary(const AdversarySpec& spec, int world) {
  if (world < 2) throw InputError("--adversary needs at least 2 ranks: it sits on the links between them");
  if (spec.link >= world) {
    throw InputError("--adversary: @" + std::to_string(spec.link) + " is not a rank of this " +
                     std::to_string(world) + "-rank run; use @0 .. @" + std::to_string(world - 1));
  }
  if (spec.kind == AttackKind::Relay && world < 3)
    throw InputError("--adversary relay needs at least 3 ranks: it hands rank r+1 the evidence of rank r+2");
  // Rank 0 releases keys along 0 -> 1 -> ... -> P-1: the closing link carries none, and without the
  // group key the relay cannot name a message's place in the run.
  if (spec.kind == AttackKind::MitmRelay && world > 2 && spec.link == world - 1) {
    throw InputError("--adversary mitm-relay@" + std::to_string(spec.link) +
                     ": the relay needs a link the key release crosses; use @0 .. @" +
                     std::to_string(world - 2));
  }
}

std::string canonical_spec(const AdversarySpec& a) {
  std::string at = "@";  // appended: GCC 12's -Wrestrict misfires on "@" + std::to_string(...) at -O3
  at += std::to_string(a.link);
  const std::string kind = attack_name(a.kind);
  switch (a.kind) {
    case AttackKind::Snoop:
      return kind;
    case AttackKind::Mitm:
      return kind + (a.forgery == MitmForgery::StolenCertificate ? ":cert" : "") + at;
    case AttackKind::MitmRelay:
    case AttackKind::StaleNonce:
    case AttackKind::SubstituteKey:
    case AttackKind::Reflect:
    case AttackKind::Relay:
      return kind + at;
    case AttackKind::Delay:
      return kind + ":" + std::to_string(a.nth) + ":" + std::to_string(a.delay.count()) + at;
    case AttackKind::Rewrite:
      return kind + ":" + std::to_string(a.nth) + (a.fit ? ":fit" : "") + at;
    default:
      return kind + ":" + std::to_string(a.nth) + at;
  }
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return out;
}

namespace {

// The attacked gradient message: on its one link, or among rank r's sends to the algorithm's peers.
std::string nth_message(const AdversarySpec& a, int world, const GradientRoute& route) {
  const std::string n = "gradient message " + std::to_string(a.nth);
  const std::string r = std::to_string(a.link);
  if (route.peers.size() <= 1) {
    const int to = route.peers.empty() ? (a.link + 1) % world : route.peers.front();
    return n + " on the link rank " + r + " -> rank " + std::to_string(to);
  }
  return n + " that rank " + r + " sends (" + route.algorithm + " sends rank " + r + "'s to " +
         ranks_text(route.peers) + "; the line that fires names the receiver)";
}

}  // namespace

std::string describe(const AdversarySpec& a, int world, const GradientRoute& route) {
  const std::string link =
      "the link rank " + std::to_string(a.link) + " -> rank " + std::to_string((a.link + 1) % world);
  const std::string nth = nth_message(a, world, route);
  switch (a.kind) {
    case AttackKind::Snoop:
      return "snoop: records every message on every link" +
             (a.snoop_dir.empty() ? std::string() : " (captures in " + a.snoop_dir.string() + ")");
    case AttackKind::Flip:
      return "flip: inverts one bit of " + nth;
    case AttackKind::Drop:
      return "drop: deletes " + nth;
    case AttackKind::Replay:
      return "replay: delivers the previous message again in place of " + nth;
    case AttackKind::Reorder:
      return "reorder: swaps " + nth + " with the message after it";
    case AttackKind::Truncate:
      return "truncate: cuts " + nth + " to half its length";
    case AttackKind::Delay:
      return "delay: holds " + nth + " back " + std::to_string(a.delay.count()) + " ms";
    case AttackKind::Rewrite:
      return "rewrite: delivers the previous message again in place of " + nth +
             (a.fit ? ", cut or padded to its length and its clear header rewritten"
                    : ", its clear header rewritten") +
             " to claim it is that message";
    case AttackKind::MitmRelay:
      return "mitm-relay: a relay on " + link +
             " runs its own key exchange with each end and re-seals "
             "every message between them";
    case AttackKind::Oversize:
      return "oversize: sends " + std::to_string(a.oversize_bytes) + " bytes where rank " +
             std::to_string(a.link) + "'s attestation evidence to rank " +
             std::to_string((a.link + 1) % world) + " belongs";
    case AttackKind::StaleNonce:
      return "stale-nonce: flips a bit of the verifier nonce on " + link;
    case AttackKind::SubstituteKey:
      return "substitute-key: replaces the key-exchange key in rank " + std::to_string(a.link) +
             "'s attestation evidence on " + link;
    case AttackKind::Reflect:
      return "reflect: hands rank " + std::to_string((a.link + 1) % world) +
             " its own evidence back as rank " + std::to_string(a.link) + "'s";
    case AttackKind::Relay:
      return "relay: hands rank " + std::to_string((a.link + 1) % world) + " rank " +
             std::to_string((a.link + 2) % world) + "'s evidence as rank " + std::to_string(a.link) + "'s";
    case AttackKind::Mitm:
      return std::string("mitm: a relay on ") + link + " answers the attestation challenge with " +
             (a.forgery == MitmForgery::OwnVendor
                  ? "its own device certificate (its own vendor root)"
                  : "rank " + std::to_string(a.link) + "'s certificate, signed with the relay's key");
  }
  return "unknown";
}

}  // namespace tt::comm
