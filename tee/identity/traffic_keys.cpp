#include "tee/identity/traffic_keys.h"

#include <algorithm>
#include <string>

#include "tee/bytes.h"
#include "tee/crypto/hkdf.h"

namespace tt::tee {

namespace {

constexpr std::size_t kSecretSize = 32;
constexpr std::uint32_t kAnyRank = 0xffffffff;  // a group stream's receiver (comm's kAnyRank, -1)

// HKDF info: prefix || be32(a) || be32(b) || suffix (a, b: the ranks the derived key is for).
std::vector<std::uint8_t> label_info(std::string_view prefix, std::uint32_t a, std::uint32_t b,
                                     std::string_view suffix = {}) {
  std::vector<std::uint8_t> info(prefix.begin(), prefix.end());
  info.resize(prefix.size() + 8);
  store_be32(info.data() + prefix.size(), a);
  store_be32(info.data() + prefix.size() + 4, b);
  info.insert(info.end(), suffix.begin(), suffix.end());
  return info;
}

SecretBytes expand(const SecretBytes& secret, const std::vector<std::uint8_t>& info,
                   std::size_t n = kSecretSize) {
  return hkdf_expand(secret.view(), info, n);
}

}  // namespace

LinkSecret derive_link_secret(const X25519KeyPair& mine, const Evidence& my_evidence,
                              const Evidence& peer_evidence) {
  return LinkSecret(derive_session_secret(mine, my_evidence, peer_evidence, "teetrain link v1"));
}

LinkSecret derive_link_secret(const X25519KeyPair& mine, const PublicKey& peer_kx, ByteView first,
                              ByteView second) {
  return LinkSecret(derive_transcript_secret(mine, peer_kx, first, second, "teetrain link real v1"));
}

Sha256Digest key_confirmation(const LinkSecret& link, std::uint32_t from, std::uint32_t to) {
  Sha256Digest d{};
  if (link.empty()) return d;
  const SecretBytes k = expand(link.secret(), label_info("teetrain key confirm v1", from, to), d.size());
  std::copy(k.data(), k.data() + d.size(), d.begin());
  return d;
}

std::vector<std::uint8_t> release_info(std::uint32_t from, std::uint32_t to, std::uint64_t number,
                                       std::string_view label) {
  std::string suffix(8, '\0');
  store_be64(reinterpret_cast<std::uint8_t*>(suffix.data()), number);
  suffix += label;
  return label_info("teetrain release v1", from, to, suffix);
}

ReleaseKey derive_release_key(const LinkSecret& link, std::uint32_t from, std::uint32_t to,
                              std::uint64_t number, std::string_view label) {
  return ReleaseKey(expand(link.secret(), release_info(from, to, number, label)));
}

StreamSecret derive_link_stream_secret(const LinkSecret& link, std::uint32_t from, std::uint32_t to) {
  return StreamSecret(expand(link.secret(), label_info("teetrain traffic v1", from, to)));
}

GroupTrafficSecret derive_group_traffic_secret(const GroupSecret& group) {
  return GroupTrafficSecret(expand(group.secret(), label_info("teetrain group traffic v1", 0, 0)));
}

std::array<std::uint8_t, 16> derive_run_id(const GroupSecret& group) {
  std::array<std::uint8_t, 16> id{};
  const SecretBytes derived = expand(group.secret(), label_info("teetrain run id v1", 0, 0), id.size());
  std::copy(derived.data(), derived.data() + id.size(), id.begin());
  return id;
}

NoticeKey derive_notice_key(const GroupSecret& group) {
  return NoticeKey(expand(group.secret(), label_info("teetrain failure notice v1", 0, 0)));
}

StreamSecret derive_group_stream_secret(const GroupTrafficSecret& traffic, std::uint32_t sender) {
  return StreamSecret(expand(traffic.secret(), label_info("teetrain group stream v1", sender, kAnyRank)));
}

StreamSecret derive_pair_stream_secret(const GroupTrafficSecret& traffic, std::uint32_t sender,
                                       std::uint32_t receiver) {
  return StreamSecret(expand(traffic.secret(), label_info("teetrain pair stream v1", sender, receiver)));
}

StreamSecret derive_subgroup_stream_secret(const GroupTrafficSecret& traffic, SubGroupKind kind,
                                           std::uint32_t sender, const SubGroupMembers& members) {
  std::string members_be(12, '\0');
  auto* m = reinterpret_cast<std::uint8_t*>(members_be.data());
  store_be32(m, members.base);
  store_be32(m + 4, members.stride);
  store_be32(m + 8, members.size);
  constexpr std::string_view kLabels[] = {"teetrain node stream v1", "teetrain local-index stream v1"};
  return StreamSecret(expand(
      traffic.secret(), label_info(kLabels[static_cast<std::size_t>(kind)], sender, kAnyRank, members_be)));
}

}  // namespace tt::tee
