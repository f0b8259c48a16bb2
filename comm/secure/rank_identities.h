// One device identity per rank (docs/design.md §5 "Keys"), checked in the handshake's status round
// (comm/secure/secure_session.h).
//
// Note [one identity per rank]: a certificate proves that a vendor made the device, not that the run
// has as many devices as ranks. Two ranks that sign with the same identity (the same device key or
// the same certificate serial, e.g. a `--device-identity` path without `{rank}`) are one device
// playing two: revoking it, or trusting "P attested devices", would mean something else than it
// says. So every rank puts into its status what it knows of identities — its own, and each ring
// neighbour's as it verified it from the neighbour's evidence — and, since every rank then holds the
// same allgathered statuses, every rank finds the same conflicts and refuses with the same message.
// A neighbour's record cannot be forged by the rank it describes, so a rank that lies about its own
// identity shows up as presenting two identities. Only certified runs compare identities: under
// `--attestation none` each rank's key is made up for the run, nothing vouches for the records, and
// an on-path relay (which that mode admits) would show up as a rank with two identities.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tee/digest.h"
#include "tee/identity/attestation.h"
#include "tee/identity/keys.h"

namespace tt::comm {

// What one rank knows of one rank's device identity.
struct IdentityRecord {
  int rank = -1;  // whose identity; -1: no record (slot unused, or that evidence was refused)
  tee::PublicKey device_key{};
  bool has_serial = false;            // false without a certificate (--attestation none)
  tee::Sha256Digest serial_digest{};  // SHA-256 of the certificate serial's hex text
  std::string serial_hex;             // its first 16 hex digits, for messages
};

// The identity `evidence` proves (key and certificate serial); call on evidence that passed.
IdentityRecord identity_of(const tee::Evidence& evidence);
// This rank's own identity: the certificate's serial when there is one.
IdentityRecord own_identity(int rank, const tee::PublicKey& key, const tee::Certificate* certificate);

// Fixed-size wire form (in clear, like the rest of the status: an identity is no secret).
inline constexpr std::size_t kIdentityRecordBytes = 96;
void encode_identity(const IdentityRecord& record, std::span<std::byte> out);  // out: kIdentityRecordBytes
IdentityRecord decode_identity(std::span<const std::byte> in);

// What a reporter said: its records, and whether its reports are trusted (secure_session.cpp: ranks
// holding the majority measurement; a rank's record of itself always counts).
struct IdentityReport {
  int reporter = 0;
  bool trusted = false;
  std::vector<IdentityRecord> records;
};

struct IdentityConflict {
  int subject = 0;     // the rank at fault (of two sharing an identity, the higher)
  std::string reason;  // names the other rank and the shared key or serial
  std::vector<int> reporters;
};

// Ranks sharing a device key or a certificate serial, and ranks whose identity two records tell
// differently; empty when every rank has its own. Deterministic: every rank computes the same list.
std::vector<IdentityConflict> identity_conflicts(const std::vector<IdentityReport>& reports);

}  // namespace tt::comm
