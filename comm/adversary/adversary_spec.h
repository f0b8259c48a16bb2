// What the on-path adversary of `--adversary SPEC` does (comm/adversary/adversary_transport.h runs it).
//
//   snoop[:DIR]        passive: records what crosses every link (messages, bytes, byte entropy, the
//                      first bytes, how many values decode as plausible gradients) and prints the
//                      adversary's view at the end; with DIR, also writes each link's capture there
//   flip:N[@r]         inverts one bit of the N-th gradient message rank r sends (default r = 0)
//   drop:N[@r]         the N-th gradient message never arrives
//   replay:N[@r]       the previous gradient message on the link is delivered again instead (N >= 2)
//   reorder:N[@r]      the N-th gradient message and the next one swap places
//   truncate:N[@r]     only the first half of the N-th gradient message arrives
//   delay:N:MS[@r]     the N-th gradient message (and what follows it) arrives MS milliseconds late
//   rewrite:N[@r]      the previous gradient message is delivered again in place of the N-th, its clear
//                      header (key epoch and nonce counter) rewritten to the N-th's: a replay that claims
//                      to be the expected message. With the TEE off messages carry no header: the
//                      replay alone
//   mitm[:cert][@r]    a relay replaces rank r's attestation evidence to its ring successor with its
//                      own: signed by a device of the relay's own vendor root, or (`:cert`) carrying
//                      rank r's genuine certificate but signed with the relay's key
//   oversize[:BYTES][@r]
//                      sends a message of BYTES (default 64 MiB) where rank r's attestation evidence
//                      to its ring successor belongs (731 bytes with a certified identity): the
//                      receiver must refuse it unread (Note [Sizes before receives], comm/transport.h)
//   mitm-relay[@r]     a relay on the link r -> r+1 that runs the whole handshake with each end itself
//                      (its own evidence and key-exchange key to both), keeps both ends' key
//                      confirmations consistent, and re-seals every message between them: under
//                      --attestation none nothing tells it from the peer, and it reads everything; a
//                      root of trust refuses its evidence (comm/adversary/adversary_relay.h)
//   stale-nonce[@r]    flips one bit of the verifier nonce rank r sends to its ring successor, which
//                      then answers another nonce: rank r must refuse that evidence as stale
//   substitute-key[@r] replaces the X25519 key in rank r's attestation evidence to its successor with
//                      the adversary's own, leaving the signed evidence as it is
//   reflect[@r]        delivers to rank r+1, in place of rank r's evidence, the evidence rank r+1 sent
//                      rank r (its own, reflected)
//   relay[@r]          delivers to rank r+1, in place of rank r's evidence, the evidence rank r+2 sent
//                      rank r+1 (another rank's, relayed; at least 3 ranks)
//
// "Gradient message" = a ring all-reduce message (tag kRing), counted from 1 on the link from rank r
// to the rank it sends to; attestation, broadcast and barrier traffic is not counted, so N means the
// same thing with every TEE mode.
#pragma once
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tt::comm {

enum class AttackKind {
  Snoop,
  Flip,
  Drop,
  Replay,
  Reorder,
  Truncate,
  Delay,
  Rewrite,
  Mitm,
  MitmRelay,
  Oversize,
  StaleNonce,
  SubstituteKey,
  Reflect,
  Relay
};
const char* attack_name(AttackKind k);
// Whether the attack is on the attestation handshake (which only TEE mode runs).
bool attacks_handshake(AttackKind k);
// Whether it changes the handshake's nonces or evidence in place (stale-nonce, substitute-key,
// reflect, relay: comm/adversary/adversary_evidence.cpp).
bool is_evidence_attack(AttackKind k);

enum class MitmForgery {
  OwnVendor,         // the relay's own device certificate, from a root the ranks do not trust
  StolenCertificate  // the victim's genuine certificate, but evidence signed with the relay's key
};

struct AdversarySpec {
  AttackKind kind = AttackKind::Snoop;
  int link = 0;         // the attacked link starts at this rank (@r)
  std::size_t nth = 1;  // 1-based index among the link's gradient messages
  std::chrono::milliseconds delay{0};
  std::filesystem::path snoop_dir;  // snoop:DIR (empty: report only)
  MitmForgery forgery = MitmForgery::OwnVendor;
  std::size_t oversize_bytes = std::size_t{64} << 20;  // oversize:BYTES

  bool passive() const { return kind == AttackKind::Snoop; }
};

// Parses SPEC (grammar above). Throws tt::InputError naming the spec and the accepted forms.
AdversarySpec parse_adversary(std::string_view spec);
// Throws tt::InputError when @r is not a rank of a world of `world` ranks.
void check_adversary(const AdversarySpec& spec, int world);
// One line for the run banner: what the adversary does, on which link.
std::string describe(const AdversarySpec& spec, int world);
// The attack as SPEC spells it, canonical ("flip:3@0", "delay:2:50@1", "mitm:cert@0", "snoop"): what the
// ranks agree on (engine/run/input_agreement.h). Snoop's directory is left out: each rank writes its own
// captures where it was told, and that changes nothing on the links.
std::string canonical_spec(const AdversarySpec& spec);

}  // namespace tt::comm
