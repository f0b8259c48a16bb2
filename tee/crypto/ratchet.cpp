#include "tee/crypto/ratchet.h"

#include <array>
#include <limits>
#include <stdexcept>
#include <string>

#include "tee/crypto/hkdf.h"

namespace tt::tee {

namespace {
constexpr std::size_t kSecretSize = 32;
}

KeyRatchet::KeyRatchet(StreamSecret initial_secret, Cipher cipher, RekeyPolicy policy)
    : cipher_(cipher), policy_(policy), secret_(std::move(initial_secret)) {
  if (secret_.size() != kSecretSize)
    throw std::invalid_argument("KeyRatchet: the initial secret must be 32 bytes");
  if (policy_.max_messages == 0 || policy_.max_bytes == 0)
    throw std::invalid_argument("KeyRatchet: rekey limits must be positive");
  derive_key();
}

void KeyRatchet::derive_key() {
  std::string info = "teetrain key ";
  info += cipher_name(cipher_);
  key_ = TrafficKey(hkdf_expand(secret_.view(), bytes_of(info), cipher_key_size(cipher_)));
}

bool KeyRatchet::record(std::uint64_t bytes) {
  ++messages_;
  bytes_ = bytes > std::numeric_limits<std::uint64_t>::max() - bytes_
               ? std::numeric_limits<std::uint64_t>::max()
               : bytes_ + bytes;
  return exhausted();
}

bool KeyRatchet::exhausted() const {
  return messages_ >= policy_.max_messages || bytes_ >= policy_.max_bytes;
}

void KeyRatchet::advance() {
  if (epoch_ == std::numeric_limits<std::uint64_t>::max())
    throw std::overflow_error("KeyRatchet: epoch overflow");
  static constexpr std::string_view kLabel = "teetrain rekey";
  std::array<std::uint8_t, kLabel.size() + 8> info{};
  std::copy(kLabel.begin(), kLabel.end(), info.begin());
  store_be64(info.data() + kLabel.size(), epoch_ + 1);
  secret_ = StreamSecret(hkdf_expand(secret_.view(), info, kSecretSize));  // move-assign wipes the old one
  ++epoch_;
  derive_key();
  messages_ = 0;
  bytes_ = 0;
}

}  // namespace tt::tee
