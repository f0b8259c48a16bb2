#include "comm/secure/rank_identities.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/hex.h"
#include "tee/bytes.h"
#include "tee/identity/x509.h"

namespace tt::comm {

namespace {

// Wire layout of a record: used(1) | rank be32 | device key 32 | has serial(1) | serial digest 32 |
// serial hex prefix 16 (NUL-padded) | zero padding up to kIdentityRecordBytes.
constexpr std::size_t kRankAt = 1, kKeyAt = 5, kHasSerialAt = 37, kDigestAt = 38, kHexAt = 70, kHexBytes = 16;
static_assert(kHexAt + kHexBytes <= kIdentityRecordBytes);

IdentityRecord with_serial(IdentityRecord r, const std::string& serial_hex) {
  r.has_serial = true;
  r.serial_digest = tee::sha256(serial_hex);
  r.serial_hex = serial_hex.substr(0, kHexBytes);
  return r;
}

struct Seen {
  const IdentityRecord* record;
  int reporter;
};

// Why two records conflict ("" when they do not), and the rank at fault.
std::pair<int, std::string> conflict(const IdentityRecord& a, const IdentityRecord& b) {
  const bool same_key = a.device_key == b.device_key;
  const bool same_serial = a.has_serial && b.has_serial && a.serial_digest == b.serial_digest;
  if (a.rank == b.rank) {
    if (same_key && a.has_serial == b.has_serial && (same_serial || !a.has_serial)) return {a.rank, ""};
    // Named strings: std::minmax of two temporaries would return references to destroyed strings.
    const std::string ka = short_hex(tee::to_hex(a.device_key), 16, ".."),
                      kb = short_hex(tee::to_hex(b.device_key), 16, "..");
    const std::string& lo = std::min(ka, kb);
    const std::string& hi = std::max(ka, kb);
    return {a.rank,
            "presented different device identities to its verifiers (device keys " + lo + " and " + hi + ")"};
  }
  const int other = std::min(a.rank, b.rank);
  const int subject = std::max(a.rank, b.rank);
  const std::string serial = a.serial_hex + "..";
  if (same_key && same_serial)
    return {subject, "the same device identity as rank " + std::to_string(other) + " (device key " +
                         short_hex(tee::to_hex(a.device_key), 16, "..") + ", certificate serial " + serial +
                         "): every rank needs its own; does --device-identity lack {rank}?"};
  if (same_key)
    return {subject, "the same device key as rank " + std::to_string(other) + " (" +
                         short_hex(tee::to_hex(a.device_key), 16, "..") +
                         "), under another certificate: every rank needs its own device"};
  if (same_serial)
    return {subject, "the same certificate serial as rank " + std::to_string(other) + " (" + serial +
                         ") with another key: a vendor issues each serial once"};
  return {subject, ""};
}

}  // namespace

IdentityRecord identity_of(const tee::Evidence& evidence) {
  IdentityRecord r;
  r.rank = static_cast<int>(evidence.rank);
  r.device_key = evidence.device_public_key;
  if (evidence.certificate.empty()) return r;
  return with_serial(r, tee::Certificate::from_der(evidence.certificate).serial_hex());
}

IdentityRecord own_identity(int rank, const tee::PublicKey& key, const tee::Certificate* certificate) {
  IdentityRecord r;
  r.rank = rank;
  r.device_key = key;
  return certificate == nullptr ? r : with_serial(r, certificate->serial_hex());
}

void encode_identity(const IdentityRecord& r, std::span<std::byte> out) {
  std::fill(out.begin(), out.begin() + kIdentityRecordBytes, std::byte{0});
  if (r.rank < 0) return;
  auto* p = reinterpret_cast<std::uint8_t*>(out.data());
  p[0] = 1;
  tee::store_be32(p + kRankAt, static_cast<std::uint32_t>(r.rank));
  std::copy(r.device_key.begin(), r.device_key.end(), p + kKeyAt);
  p[kHasSerialAt] = r.has_serial ? 1 : 0;
  std::copy(r.serial_digest.begin(), r.serial_digest.end(), p + kDigestAt);
  std::copy_n(r.serial_hex.begin(), std::min(r.serial_hex.size(), kHexBytes), p + kHexAt);
}

IdentityRecord decode_identity(std::span<const std::byte> in) {
  IdentityRecord r;
  const auto* p = reinterpret_cast<const std::uint8_t*>(in.data());
  if (p[0] != 1) return r;
  // A rank index beyond int is garbage from a broken peer: treat it as no record.
  const std::uint32_t rank = tee::load_be32(p + kRankAt);
  if (rank > 0x7fffffffu) return r;
  r.rank = static_cast<int>(rank);
  std::copy_n(p + kKeyAt, r.device_key.size(), r.device_key.begin());
  r.has_serial = p[kHasSerialAt] == 1;
  std::copy_n(p + kDigestAt, r.serial_digest.size(), r.serial_digest.begin());
  for (std::size_t i = 0; i < kHexBytes && p[kHexAt + i] != 0; ++i)
    r.serial_hex.push_back(static_cast<char>(p[kHexAt + i]));
  return r;
}

std::vector<IdentityConflict> identity_conflicts(const std::vector<IdentityReport>& reports) {
  std::vector<Seen> seen;
  for (const IdentityReport& rep : reports) {
    for (const IdentityRecord& rec : rep.records) {
      if (rec.rank >= 0 && (rep.trusted || rec.rank == rep.reporter)) seen.push_back({&rec, rep.reporter});
    }
  }
  std::map<std::pair<int, std::string>, std::set<int>> found;  // (subject, reason) -> reporters
  for (std::size_t i = 0; i < seen.size(); ++i) {
    for (std::size_t j = i + 1; j < seen.size(); ++j) {
      auto [subject, reason] = conflict(*seen[i].record, *seen[j].record);
      if (reason.empty()) continue;
      auto& reporters = found[{subject, std::move(reason)}];
      reporters.insert(seen[i].reporter);
      reporters.insert(seen[j].reporter);
    }
  }
  std::vector<IdentityConflict> out;
  for (const auto& [key, reporters] : found)
    out.push_back({key.first, key.second, std::vector<int>(reporters.begin(), reporters.end())});
  return out;
}

}  // namespace tt::comm
