// The attested handshake's key-derivation labels and their HKDF info layout, in one place: the
// session (comm/secure_session.cpp) derives its keys with them, and the teaching relay
// (comm/adversary_relay.cpp) speaks the same protocol to show what an unattested handshake admits.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "tee/bytes.h"

namespace tt::comm::handshake {

inline constexpr std::string_view kLinkLabel = "teetrain link v1";  // the link's session secret
inline constexpr std::string_view kConfirmLabel =
    "teetrain key confirm v1";                                            // key confirmation, per direction
inline constexpr std::string_view kReleaseLabel = "teetrain release v1";  // secrets released hop by hop

// HKDF info: prefix || be32(a) || be32(b) || suffix (a, b: the ranks the derived key is for).
inline std::vector<std::uint8_t> label_info(std::string_view prefix, int a, int b,
                                            std::string_view suffix = {}) {
  std::vector<std::uint8_t> info(prefix.begin(), prefix.end());
  info.resize(prefix.size() + 8);
  tee::store_be32(info.data() + prefix.size(), static_cast<std::uint32_t>(a));
  tee::store_be32(info.data() + prefix.size() + 4, static_cast<std::uint32_t>(b));
  info.insert(info.end(), suffix.begin(), suffix.end());
  return info;
}

}  // namespace tt::comm::handshake
