// Start-up of TEE mode on each rank, shared by `teetrain train` and `teetrain bench allreduce`:
// what the rank trusts (trust root, its certified identity, the verifier policy), the attested
// handshake with its ring neighbours (comm/secure/secure_session.h), and the one sealed channel that carries
// every message between ranks from then on (docs/design.md §5 "Keys").
//
// The run refuses, before any key is agreed, when more than one rank runs in TEE mode without a root
// of trust: such attestation proves nothing (an on-path party answers each side with its own fresh
// key). `AttestationMode::None` runs anyway, and every banner and summary says so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "comm/secure/attest_evidence.h"
#include "comm/secure/sealed_channel.h"
#include "comm/secure/secure_session.h"
#include "comm/transport.h"
#include "core/profiler.h"
#include "engine/keys/real_attestation.h"
#include "tee/crypto/aead.h"

namespace tt {

// What a rank trusts and proves, as the user gave it (paths not yet read).
struct TrustOptions {
  comm::AttestationMode mode = comm::AttestationMode::Certified;
  std::string trust_root;            // the vendor root certificate (PEM); its CRL must lie beside it
  std::string device_identity;       // this rank's key + certificate (PEM); "{rank}" becomes the rank
  std::string policy;                // reference measurements (comm/secure/attest_evidence.h); empty: our own
  bool no_revocation_check = false;  // run without the CRL (flagged in every report)
  bool allow_expired_crl =
      false;              // accept a stale CRL (flagged in every report; Note [Revocation list freshness])
  std::string crl_state;  // engine/keys/crl_state.h; "{rank}" becomes the rank; empty: beside the identity
  // mode Real: which hardware attests (tdx, snp, tdx+gpu, snp+gpu) and where its evidence comes from.
  comm::RealAttestationKind real_kind;
  RealAttestationOptions real;
};

// "{rank}" in `pattern` replaced by `rank` (every occurrence); other text unchanged.
std::string expand_rank(const std::string& pattern, int rank);

// Checks the options against the world size and loads what they name. InputError (exit 2), with
// what to do, on: TEE with several ranks and neither a trust root nor --attestation none; a trust
// root without an identity or the reverse; --attestation none together with trust flags; a trust
// root without its revocation list (unless no_revocation_check); any file that cannot be used.
// IntegrityError (exit 3) on a stale revocation list or one older than this rank accepted before
// (load_trust). Whether the identity is trusted is checked by the peers (exit 3 everywhere).
comm::AttestConfig make_attest_config(const TrustOptions& trust, int rank, int world, std::string run_config);

// The trust root the options name (null without --trust-root), with its revocation list refused when
// stale (unless allow_expired_crl) and checked against, then recorded in, this rank's CRL state
// (engine/keys/crl_state.h; Note [Revocation list freshness], tee/identity/x509.h).
std::shared_ptr<const tee::TrustAnchor> load_trust(const TrustOptions& trust, int rank);

// Where this rank's CRL state is: --crl-state with {rank} expanded, else beside the rank's device
// identity; empty when neither is given (a verifier without an identity: nothing is remembered).
std::filesystem::path crl_state_path(const TrustOptions& trust, int rank);

// One line for banners: how the peers of this run were authenticated.
std::string attestation_banner(const comm::AttestConfig& config, int world);
// The summary's "attestation" object: mode, whether an on-path adversary can read everything, and
// whether revoked devices are refused.
struct AttestationSummary {
  std::string mode;  // "certified", "none", "single rank", or the real kind: "tdx", "snp+gpu", ...
  bool authenticated = false;
  bool revocation_checked = false;               // a trust anchor with its CRL
  std::optional<tee::CrlFacts> revocation_list;  // that CRL's number and nextUpdate
  // Non-empty when nothing authenticates the peers, revocation is not checked, or the list is stale.
  std::string warning;
  std::string evidence;  // real attestation: what verified the peers' evidence and what it did not check
};
AttestationSummary attestation_summary(const comm::AttestConfig& config, int world);

struct TeeChannelOptions {
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
  std::uint64_t rekey_mb = 0;
  std::size_t crypto_threads = 1;
};

class TeeSession {
 public:
  // Collective: attests the ring neighbours, agrees keys and builds the sealed channel.
  TeeSession(comm::Transport& transport, const comm::AttestConfig& config, const TeeChannelOptions& channel,
             Profiler* profiler);

  comm::SealedChannel& channel() { return *channel_; }
  const comm::SealedChannel& channel() const { return *channel_; }
  comm::SessionKeys& keys();  // for release_secret; throws RunError after end_setup()
  // Wipes the session's link and group secrets once every secret has been released: from here on
  // only the channel's ratchets hold key material, and they wipe each epoch's secret when they move on.
  void end_setup() { keys_.reset(); }
  // The key the ranks' failure notices are tagged under (Note [Sealed notices],
  // comm/secure/first_failure.h): derived from the group secret, kept after end_setup().
  const tee::NoticeKey& notice_key() const { return notice_key_; }
  // Real attestation: what this rank verified of its ring neighbours' evidence (kept after end_setup()).
  const std::vector<comm::SessionKeys::VerifiedPeer>& verified_peers() const { return verified_peers_; }

 private:
  std::optional<comm::SessionKeys> keys_;
  tee::NoticeKey notice_key_;
  std::vector<comm::SessionKeys::VerifiedPeer> verified_peers_;
  std::unique_ptr<comm::SealedChannel> channel_;
};

}  // namespace tt
