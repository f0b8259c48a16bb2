#include "engine/keys/attestation_record.h"

#include <algorithm>
#include <array>
#include <set>

#include "base/error.h"
#include "tee/byte_reader.h"
#include "tee/bytes.h"
#include "tee/digest.h"

namespace tt {
namespace {

constexpr std::array<std::uint8_t, 8> kMagic = {'T', 'T', 'V', 'R', 'E', 'C', '0', '1'};
constexpr std::size_t kMaxEntries = 2;  // a rank verifies at most its two ring neighbours
constexpr std::uint32_t kMaxRank = 1u << 24;

[[noreturn]] void refuse(const std::string& why) {
  throw IntegrityError("attestation record: " + why);
}

bool printable(const std::string& s) {
  return s.size() <= kMaxFieldBytes &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

void put_be32(std::vector<std::byte>& out, std::size_t v) {
  std::array<std::uint8_t, 4> b{};
  tee::store_be32(b.data(), static_cast<std::uint32_t>(v));
  for (const std::uint8_t c : b) out.push_back(static_cast<std::byte>(c));
}

void put_string(std::vector<std::byte>& out, const std::string& s) {
  put_be32(out, s.size());
  for (const char c : s) out.push_back(static_cast<std::byte>(c));
}

// What the verifier's own line (RealEvidenceVerifier::describe) says it did NOT check, its parts
// joined: the one place that line is read, so what it lists and what the record lists cannot part.
std::string not_checked_of(const std::string& describe) {
  std::string out;
  std::size_t at = 0;
  while (at <= describe.size()) {
    const std::size_t end = std::min(describe.find("; ", at), describe.size());
    const std::string part = describe.substr(at, end - at);
    // Both spellings: "GPU RIMs: not checked (no --gpu-rims)" is a gap as much as "NOT checked".
    if (part.find("NOT checked") != std::string::npos || part.find("not checked") != std::string::npos)
      out += (out.empty() ? "" : "; ") + part;
    at = end + 2;
  }
  return out;
}

std::string rank_name(int r) {
  return "rank " + std::to_string(r);
}

// Rank v's ring neighbours: the ranks it attests in the handshake.
std::set<int> neighbours(int v, int p) {
  return {(v + 1) % p, (v + p - 1) % p};
}

// Rank v's entries: exactly its neighbours, once each, under the agreed kind, each "ok".
void check_reporter(int v, const std::vector<VerifiedEntry>& entries, int p, const std::string& kind) {
  const std::set<int> expected = neighbours(v, p);
  std::set<int> seen;
  for (const VerifiedEntry& e : entries) {
    const std::string who = rank_name(v) + " reports " + rank_name(e.subject);
    if (expected.count(e.subject) == 0) refuse(who + ", which is not its ring neighbour");
    if (!seen.insert(e.subject).second) refuse(who + " twice");
    if (e.kind != kind) refuse(who + "'s evidence as " + e.kind + " where " + kind + " was agreed");
    if (e.verdict != "ok") refuse(who + " refused (" + e.verdict + ")");
  }
  for (const int s : expected)
    if (seen.count(s) == 0) refuse(rank_name(v) + " reports no verdict on its neighbour " + rank_name(s));
}

}  // namespace

std::vector<VerifiedEntry> own_entries(int rank, const comm::RealAttestation& real,
                                       const std::vector<comm::SessionKeys::VerifiedPeer>& peers) {
  const comm::RealVerifierFacts facts = real.verifier->facts();
  std::vector<VerifiedEntry> out;
  for (const comm::SessionKeys::VerifiedPeer& p : peers)
    out.push_back({.verifier = rank,
                   .subject = p.rank,
                   .kind = real.kind.name,
                   .verdict = "ok",  // the handshake refuses every rank before a verdict that is not
                   .roots = facts.test_roots ? "test roots" : "vendor roots",
                   .not_checked = not_checked_of(real.verifier->describe()),
                   .measurements = p.measurements});
  return out;
}

std::vector<std::byte> encode_entries(const std::vector<VerifiedEntry>& entries) {
  std::vector<std::byte> out;
  for (const std::uint8_t c : kMagic) out.push_back(static_cast<std::byte>(c));
  out.push_back(static_cast<std::byte>(entries.size() >> 8));
  out.push_back(static_cast<std::byte>(entries.size() & 0xff));
  for (const VerifiedEntry& e : entries) {
    put_be32(out, static_cast<std::size_t>(e.verifier));
    put_be32(out, static_cast<std::size_t>(e.subject));
    for (const std::string* s : {&e.kind, &e.verdict, &e.roots, &e.not_checked, &e.measurements})
      put_string(out, printable(*s) ? *s : "(too long or not printable)");
  }
  return out;
}

std::vector<VerifiedEntry> decode_entries(std::span<const std::byte> bytes, int from) {
  const std::string who = rank_name(from) + "'s verified evidence";
  auto malformed = [&](const std::string& why) { refuse(who + " is malformed (" + why + ")"); };
  tee::ByteReader in(tee::ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), who,
                     [&](std::size_t at) { malformed("truncated at byte " + std::to_string(at)); });
  if (bytes.size() > kMaxRecordBytes) malformed(std::to_string(bytes.size()) + " bytes");
  const tee::ByteView magic = in.take(kMagic.size(), "magic");
  if (!std::equal(magic.begin(), magic.end(), kMagic.begin())) malformed("bad magic");
  const std::size_t n = in.be16("entries");
  if (n > kMaxEntries) malformed(std::to_string(n) + " entries");
  auto u32 = [&](const char* field) { return tee::load_be32(in.take(4, field).data()); };
  auto string = [&](const char* field) {
    const std::size_t len = u32(field);
    if (len > kMaxFieldBytes) malformed(std::string("a ") + field + " of " + std::to_string(len) + " bytes");
    const tee::ByteView s = in.take(len, field);
    std::string out(s.begin(), s.end());
    if (!printable(out)) malformed(std::string("a ") + field + " that is not printable ASCII");
    return out;
  };
  std::vector<VerifiedEntry> out(n);
  for (VerifiedEntry& e : out) {
    const std::uint32_t verifier = u32("verifier");
    if (verifier != static_cast<std::uint32_t>(from)) malformed("an entry of another verifier");
    e.verifier = from;
    const std::uint32_t subject = u32("subject");
    if (subject > kMaxRank) malformed("subject rank " + std::to_string(subject));
    e.subject = static_cast<int>(subject);
    e.kind = string("kind");
    e.verdict = string("verdict");
    e.roots = string("roots");
    e.not_checked = string("not checked");
    e.measurements = string("measurements");
  }
  if (in.remaining() != 0) malformed("bytes after the last entry");
  return out;
}

AttestationRecord reconcile(const std::vector<std::vector<VerifiedEntry>>& by_rank, const std::string& kind) {
  const int p = static_cast<int>(by_rank.size());
  for (int v = 0; v < p; ++v) check_reporter(v, by_rank[static_cast<std::size_t>(v)], p, kind);
  AttestationRecord record{.kind = kind, .ranks = {}, .sha256 = ""};
  std::vector<VerifiedEntry> all;  // by subject, then verifier: the canonical order the digest covers
  for (int s = 0; s < p; ++s) {
    RankMeasurements m{.rank = s, .measurements = "", .verified_by = {}};
    for (const auto& entries : by_rank)
      for (const VerifiedEntry& e : entries)
        if (e.subject == s) m.verified_by.push_back(e);
    std::sort(m.verified_by.begin(), m.verified_by.end(),
              [](const VerifiedEntry& a, const VerifiedEntry& b) { return a.verifier < b.verifier; });
    const VerifiedEntry& first = m.verified_by.front();  // check_reporter: every rank has a verifier
    for (const VerifiedEntry& e : m.verified_by)
      if (e.measurements != first.measurements)
        refuse(rank_name(s) + "'s measurements as " + rank_name(first.verifier) + " verified them (" +
               first.measurements + ") differ from those " + rank_name(e.verifier) + " verified (" +
               e.measurements + ")");
    m.measurements = first.measurements;
    all.insert(all.end(), m.verified_by.begin(), m.verified_by.end());
    record.ranks.push_back(std::move(m));
  }
  const std::vector<std::byte> canonical = encode_entries(all);
  record.sha256 = tee::to_hex(
      tee::sha256(tee::ByteView(reinterpret_cast<const std::uint8_t*>(canonical.data()), canonical.size())));
  return record;
}

nlohmann::json AttestationRecord::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const RankMeasurements& m : ranks) {
    nlohmann::json by = nlohmann::json::array();
    for (const VerifiedEntry& e : m.verified_by)
      by.push_back({{"rank", e.verifier}, {"roots", e.roots}, {"not_checked", e.not_checked}});
    out.push_back({{"rank", m.rank}, {"measurements", m.measurements}, {"verified_by", by}});
  }
  return out;
}

}  // namespace tt
