// Secure session setup (docs/design.md §5 "Keys"): the attested handshake every rank runs at start-up, the
// group key, and the release of secrets (the dataset key) from rank 0 to attested ranks.
//
// establish_keys, on every rank, with each ring neighbour (prev and next; P = 2: the one peer; P = 1:
// nobody):
//   1. send a fresh verifier nonce, receive the neighbour's;
//   2. answer the neighbour's nonce with evidence (tee/identity/attestation.h: certificate, measurements, a
//   fresh
//      X25519 key, signed by the certified device key), receive the neighbour's evidence and verify it
//      against our trust anchor (chain, revocation, device profile), its rank, our nonce and our
//      policy (reference measurements; by default what we run ourselves); on success derive the link
//      secret (X25519 + HKDF over both evidences: certificates, measurements, nonces and ephemeral keys);
//      with AttestationMode::Real the evidence is the hardware's instead, its REPORTDATA binding the
//      ephemeral key to the neighbour's nonce (comm/secure/real_evidence.h), and the secret covers both
//      ranks' messages;
//   3. confirm the key on every link, the closing link P-1 -> 0 included, before any training traffic;
//   4. allgather a status (plaintext: no key exists yet) so that a failure anywhere refuses on every
//      rank, with one message naming each rejected rank, the reason and who reported it; the status
//      also carries the device identities each rank knows (its own and its neighbours' as verified),
//      so two ranks with the same device key or certificate serial are refused on every rank too
//      (Note [one identity per rank] in comm/secure/rank_identities.h);
//   5. rank 0 draws the group secret and passes it around the ring, sealed on every link
//      (release_secret), again with a status allgather. Secrets released later (the dataset and
//      checkpoint keys) travel the same way, so they reach only ranks whose evidence passed.
// Local failures (unreadable identity or binary, or an own certificate that this rank's anchor
// refuses) are reported through the same status round, so the other ranks refuse with the reason
// instead of timing out. With AttestationMode::None the evidence carries no certificate and nothing
// ties a key to a device: the handshake then only protects against passive eavesdroppers who do not
// take part in it.
//
// Every message of the handshake uses its own tags (below), distinct from the ring and collectives.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/secure/attest_evidence.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt::comm {

namespace tags {
inline constexpr int kAttestNonce = 110;
inline constexpr int kAttestEvidence = 111;
inline constexpr int kKeyRelease = 112;
inline constexpr int kKeyConfirm = 113;
}  // namespace tags

// The secrets of one rank after the handshake. Never printed: describe() shows fingerprints only.
struct SessionKeys {
  int rank = 0;
  int world_size = 1;
  tee::LinkSecret link_next;        // shared with rank+1 (empty for P = 1)
  tee::LinkSecret link_prev;        // shared with rank-1 (for P = 2 the same secret as link_next)
  tee::GroupSecret group;           // shared by all ranks, from rank 0
  tee::Sha256Digest measurement{};  // this rank's combined measurement (tee::Measurements::combined)
  AttestationMode attestation = AttestationMode::Certified;
  tee::PublicKey device_public_key{};
  std::uint64_t releases = 0;  // release_secret calls so far: each one derives fresh link keys
  // Real attestation: what this rank verified of each ring neighbour's evidence (RealVerdict::measurements).
  struct VerifiedPeer {
    int rank = 0;
    std::string measurements;
  };
  std::vector<VerifiedPeer> verified_peers;

  // Directional traffic secrets for a SealedChannel (rank -> next, prev -> rank, group; derived in
  // tee/identity/traffic_keys.h). Never build a second SealedChannel from channel_keys(): two channels would
  // draw the same nonces under the same keys. Use one channel for all traffic.
  ChannelKeys channel_keys() const;
  // 16 bytes derived from the group secret: the same on every rank, new for every session.
  std::array<std::uint8_t, 16> run_id() const;
  // "rank 0: measurement 1a2b.., device key 3c4d.., link next fp .., link prev fp .., group fp .."
  std::string describe() const;
};

// What this rank brings to step 2: the measurements it claims (its own policy's default too) and the
// bytes it sends for its evidence. A part of the handshake rather than fields of AttestConfig, so that
// the tests' lying rank (a substituted measurement, a damaged signature) is a component of its own and
// the production config carries no fault switches.
class EvidenceSource {
 public:
  virtual ~EvidenceSource() = default;
  // What this rank claims to run. Throws (InputError: an unreadable binary) if it cannot say.
  virtual tee::Measurements measurements(const AttestConfig& config) const = 0;
  // The bytes that carry `evidence` to a peer.
  virtual std::vector<std::uint8_t> wire_bytes(const tee::Evidence& evidence) const = 0;
};

// The honest source every real rank uses: expected_measurement(config), the evidence serialized.
class MeasuredEvidence final : public EvidenceSource {
 public:
  tee::Measurements measurements(const AttestConfig& config) const override;
  std::vector<std::uint8_t> wire_bytes(const tee::Evidence& evidence) const override;
};

// Runs the attested handshake and group-key distribution (above), this rank's evidence from `source`
// (the first form: MeasuredEvidence). Collective: every rank calls it.
// Throws AttestationError (the same refusal on every rank) when any evidence is rejected or the group
// key fails to open anywhere; RunError if a peer does not answer in time.
SessionKeys establish_keys(Transport& transport, const AttestConfig& config);
SessionKeys establish_keys(Transport& transport, const AttestConfig& config, const EvidenceSource& source);

// Releases a secret of `size` bytes from rank 0 to every rank, sealed hop by hop along the ring under
// one-time keys derived from the link secrets, `label` and keys.releases (tee::derive_release_key: so
// no key is ever used for two messages). Collective: every rank calls it with the same size and label; rank 0
// passes the secret, the others nullptr. Returns the secret on every rank. A message that fails to open
// refuses on every rank (AttestationError naming the first rank that failed and why).
tee::SecretBytes release_secret(Transport& transport, SessionKeys& keys, const tee::SecretBytes* secret,
                                std::size_t size, std::string_view label);
// release_secret for a key typed by purpose (tee/crypto/purpose_keys.h): what rank 0 releases arrives as the
// same purpose on every rank.
template <tee::KeyPurpose P>
tee::Key<P> release_key(Transport& transport, SessionKeys& keys, const tee::Key<P>* key, std::size_t size,
                        std::string_view label) {
  return tee::Key<P>(release_secret(transport, keys, key != nullptr ? &key->secret() : nullptr, size, label));
}

// A SealedChannel for this session: `options` with rank, world size and (when left zero) run id
// filled in from `keys`.
std::unique_ptr<SealedChannel> make_sealed_channel(const SessionKeys& keys, SealedChannelOptions options,
                                                   Profiler* profiler = nullptr);

}  // namespace tt::comm
