// The ring's traffic secrets, typed by purpose (purpose_keys.h), and every HKDF derivation that makes
// them, in one place: comm/ (the handshake, the sealed channel's streams, the teaching relay) calls these
// by name and never runs HKDF itself, so it cannot derive one secret from another's input, hand a link
// secret where a stream secret is expected, or spell a label twice.
//
//   link secret         = HKDF(X25519, salt = SHA-256(both evidences), info = "teetrain link v1", 32)
//   key confirmation    = HKDF-Expand(link,  "teetrain key confirm v1"   || be32(from) || be32(to), 32)
//   release key         = HKDF-Expand(link,  "teetrain release v1"       || be32(from) || be32(to)
//                                             || be64(release number) || label, 32)
//   link stream secret  = HKDF-Expand(link,  "teetrain traffic v1"       || be32(from) || be32(to), 32)
//   group traffic       = HKDF-Expand(group, "teetrain group traffic v1" || be32(0) || be32(0), 32)
//   run id              = HKDF-Expand(group, "teetrain run id v1"        || be32(0) || be32(0), 16)
//   notice key          = HKDF-Expand(group, "teetrain failure notice v1" || be32(0) || be32(0), 32)
//   group stream secret = HKDF-Expand(group traffic, "teetrain group stream v1" || be32(sender)
//                                             || be32(0xffffffff), 32)
//   pair stream secret  = HKDF-Expand(group traffic, "teetrain pair stream v1" || be32(sender)
//                                             || be32(receiver), 32)
//   sub-group stream    = HKDF-Expand(group traffic, "teetrain node stream v1" (or "teetrain
//     secret                                  local-index stream v1") || be32(sender) || be32(0xffffffff)
//                                             || be32(base) || be32(stride) || be32(size), 32)
//     (the members base + stride * i, i < size: Note [Sub-group streams], comm/channel.h)
//
// A stream secret is what a KeyRatchet starts from (ratchet.h: it makes the epochs' TrafficKeys). Link
// streams are directional: with two ranks both links share one link secret, but each direction gets its
// own stream secret, so the two ends never seal under one key with one origin.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tee/crypto/purpose_keys.h"
#include "tee/digest.h"
#include "tee/identity/attestation.h"
#include "tee/identity/keys.h"

namespace tt::tee {

// The link secret of two attested ranks, from the handshake's transcript (derive_session_secret under
// "teetrain link v1"). Throws std::invalid_argument if `my_evidence` does not carry `mine`'s key.
LinkSecret derive_link_secret(const X25519KeyPair& mine, const Evidence& my_evidence,
                              const Evidence& peer_evidence);
// The link secret of two ranks attested with real evidence: derive_transcript_secret under "teetrain
// link real v1" over both ends' handshake messages in rank order (comm/secure/real_evidence.h).
LinkSecret derive_link_secret(const X25519KeyPair& mine, const PublicKey& peer_kx, ByteView first,
                              ByteView second);
// One direction's proof of the link secret (the handshake's key confirmation): directional, so a
// reflected confirmation does not pass. All zeros for an empty secret (which never confirms).
Sha256Digest key_confirmation(const LinkSecret& link, std::uint32_t from, std::uint32_t to);

// The HKDF info of the `number`-th release of a secret named `label` on the hop from -> to; it also
// starts that message's associated data (the releaser appends the size).
std::vector<std::uint8_t> release_info(std::uint32_t from, std::uint32_t to, std::uint64_t number,
                                       std::string_view label);
// The one-time key of that hop: one message per key.
ReleaseKey derive_release_key(const LinkSecret& link, std::uint32_t from, std::uint32_t to,
                              std::uint64_t number, std::string_view label);

// The secret of the ring-link stream from -> to (from's link to its next rank, to's link to its prev).
StreamSecret derive_link_stream_secret(const LinkSecret& link, std::uint32_t from, std::uint32_t to);
// The group's traffic secret, which the group and pair streams' secrets come from.
GroupTrafficSecret derive_group_traffic_secret(const GroupSecret& group);
// 16 bytes, the same on every rank and new every session: bound into every sealed message's AAD.
std::array<std::uint8_t, 16> derive_run_id(const GroupSecret& group);
// The key that authenticates the ranks' failure notices (comm/secure/first_failure.h): the same on
// every rank of the session, and held after the session's other secrets are wiped.
NoticeKey derive_notice_key(const GroupSecret& group);
// The secret of `sender`'s stream to the whole group, and of the off-ring stream sender -> receiver.
StreamSecret derive_group_stream_secret(const GroupTrafficSecret& traffic, std::uint32_t sender);
StreamSecret derive_pair_stream_secret(const GroupTrafficSecret& traffic, std::uint32_t sender,
                                       std::uint32_t receiver);
// The secret of `sender`'s stream to a sub-group of the ranks (Note [Sub-group streams],
// comm/channel.h): its kind and its members base + stride * i, i < size, all in the label, so two
// sub-groups never share a key.
enum class SubGroupKind : std::uint8_t { Node, LocalIndex };
struct SubGroupMembers {
  std::uint32_t base = 0;
  std::uint32_t stride = 1;
  std::uint32_t size = 0;
};
StreamSecret derive_subgroup_stream_secret(const GroupTrafficSecret& traffic, SubGroupKind kind,
                                           std::uint32_t sender, const SubGroupMembers& members);

}  // namespace tt::tee
