// Every rank's verified measurements, held by every rank (`train --attestation tdx|snp[+gpu]`).
//
// Note [Attestation record]: the handshake lets a rank verify only its ring neighbours' evidence
// (comm/secure/secure_session.h), so after it each rank sends every other rank, over the sealed
// channel, what it verified of each neighbour: the kind, the verdict, the measurements, the roots and
// what its verifier did not check. Every rank then checks the same table the same way (reconcile):
// each rank reports exactly its ring neighbours, under the agreed kind, each "ok" (a rank cannot lower
// a verdict: one that reports a neighbour refused refuses the run on every rank); where two neighbours
// verified the same rank (P >= 3) they saw the same measurements. Any failure is an IntegrityError
// (exit 3) on every rank alike, naming the ranks. The table's digest joins the agreed inputs (Note
// [Agreed inputs], engine/run/input_agreement.h), so ranks that hold different tables refuse to train,
// and the summary lists every rank's measurements with the ranks that verified them.
//
// Wire form of one rank's entries (untrusted bytes: decode_entries refuses anything else):
//   "TTVREC01" | be16 n (at most 2) | n x { be32 verifier | be32 subject |
//                                          5 x { be32 len | printable ASCII (at most kMaxFieldBytes) } }
//   the five strings: kind, verdict, roots, not checked, measurements; nothing after the last entry.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "comm/secure/real_evidence.h"
#include "comm/secure/secure_session.h"

namespace tt {

inline constexpr std::size_t kMaxFieldBytes = 16 * 1024;
inline constexpr std::size_t kMaxRecordBytes = 8 + 2 + 2 * (8 + 5 * (4 + kMaxFieldBytes));

// What one rank verified of one neighbour.
struct VerifiedEntry {
  int verifier = 0;
  int subject = 0;
  std::string kind;          // as --attestation spells it: "tdx+gpu"
  std::string verdict;       // "ok", or why the verifier refused
  std::string roots;         // "test roots" or "vendor roots"
  std::string not_checked;   // what the verifier did not check ("" when it checked everything)
  std::string measurements;  // comm::RealVerdict::measurements
};

// This rank's entries: one per verified neighbour, under its verifier.
std::vector<VerifiedEntry> own_entries(int rank, const comm::RealAttestation& real,
                                       const std::vector<comm::SessionKeys::VerifiedPeer>& peers);

std::vector<std::byte> encode_entries(const std::vector<VerifiedEntry>& entries);
// Parses rank `from`'s entries; IntegrityError naming it on anything but the wire form above, or an
// entry whose verifier is not `from`.
std::vector<VerifiedEntry> decode_entries(std::span<const std::byte> bytes, int from);

// One rank's measurements as its neighbours verified them.
struct RankMeasurements {
  int rank = 0;
  std::string measurements;
  std::vector<VerifiedEntry> verified_by;  // by verifier rank
};

struct AttestationRecord {
  std::string kind;
  std::vector<RankMeasurements> ranks;  // every rank, in order
  std::string sha256;                   // of the table's canonical encoding (hex)

  // [{"rank": 0, "measurements": .., "verified_by": [{"rank": 1, "roots": .., "not_checked": ..}]}, ..]
  nlohmann::json to_json() const;
};

// The checks of Note [Attestation record] on every rank's entries (by_rank[r]: rank r's), for the agreed
// `kind`. Returns the table; IntegrityError naming the first rank at fault.
AttestationRecord reconcile(const std::vector<std::vector<VerifiedEntry>>& by_rank, const std::string& kind);

}  // namespace tt
