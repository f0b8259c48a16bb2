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
//   rewrite:N:fit[@r]  the same, its ciphertext also cut or zero-padded to the N-th's length: every
//                      clear field (length, epoch, counter) is the expected message's, so only the key
//                      and the associated data can refuse it (hier's messages of another sub-group,
//                      whose lengths differ, are otherwise refused for their length)
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
// "Gradient message" = an all-reduce message (tag kRing), counted from 1 among those rank r sends:
// with the flat ring all go to rank r+1; with rd, rhd, hier or auto (at P > 2) to the peers of the
// algorithm's steps (GradientRoute below; the line that fires names the receiver). Attestation,
// broadcast and barrier traffic is not counted, so N means the same thing with every TEE mode.
#pragma once
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  bool fit = false;  // rewrite:N:fit: the replay cut or padded to the replaced message's length

  bool passive() const { return kind == AttackKind::Snoop; }
};

// Parses SPEC (grammar above). Throws tt::InputError naming the spec and the accepted forms.
AdversarySpec parse_adversary(std::string_view spec);
// Throws tt::InputError when @r is not a rank of a world of `world` ranks.
void check_adversary(const AdversarySpec& spec, int world);
// Where rank r's gradient messages go, as the run's all-reduce sends them: the engine knows its
// algorithm, the spec does not (engine/run/adversary_wire.h fills it in).
struct GradientRoute {
  std::vector<int> peers;  // the ranks r sends them to, in the order it first does (empty: r+1 alone)
  std::string algorithm;   // what sends them there ("the hierarchical all-reduce"), for the banner
};

// "rank 1", "ranks 1 and 2", "ranks 1, 2 and 4": the banner's and the report's receivers.
std::string ranks_text(const std::vector<int>& ranks);

// One line for the run banner: what the adversary does, to which message on which link: the link
// r -> q where every gradient message of r goes to q, else rank r's sends and their possible receivers.
std::string describe(const AdversarySpec& spec, int world, const GradientRoute& route = {});
// The attack as SPEC spells it, canonical ("flip:3@0", "delay:2:50@1", "mitm:cert@0", "snoop"): what the
// ranks agree on (engine/run/input_agreement.h). Snoop's directory is left out: each rank writes its own
// captures where it was told, and that changes nothing on the links.
std::string canonical_spec(const AdversarySpec& spec);

}  // namespace tt::comm
