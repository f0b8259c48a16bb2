#include "comm/emulated_link_transport.h"

#include <array>
#include <cstdio>
#include <optional>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::comm {
namespace {

using Clock = std::chrono::steady_clock;
using Token = std::array<std::uint8_t, EmulatedLinkTransport::kTokenBytes>;

// Arrival times further than this from the receiver's clock come from another host's clock.
constexpr auto kPlausible = std::chrono::seconds(60);

std::span<const std::byte> bytes_of(const Token& t) {
  return {reinterpret_cast<const std::byte*>(t.data()), t.size()};
}

// Done when the token went out AND the link has carried the payload.
class TokenSend final : public RequestState {
 public:
  TokenSend(Transport& inner, std::size_t bytes, Clock::time_point done_at)
      : inner_(inner), bytes_(bytes), done_at_(done_at) {}
  // The token must stay put while the inner send reads it: post only once the object has its address.
  void post(int peer, int tag) {
    tee::store_be64(token_.data(), bytes_);
    tee::store_be64(token_.data() + 8, static_cast<std::uint64_t>(done_at_.time_since_epoch().count()));
    req_ = inner_.isend(peer, bytes_of(token_), tag);
  }
  std::optional<std::size_t> poll() override {
    if (!req_.done() && !inner_.test(req_)) return std::nullopt;
    if (Clock::now() < done_at_) return std::nullopt;
    return bytes_;
  }

 private:
  Transport& inner_;
  std::size_t bytes_;
  Clock::time_point done_at_;
  Token token_{};
  Request req_;
};

// Done when the token arrived and its payload's arrival time has passed; reports the payload length.
class TokenRecv final : public RequestState {
 public:
  TokenRecv(Transport& inner, std::size_t capacity, int peer)
      : inner_(inner), capacity_(capacity), peer_(peer) {}
  void post(int tag) {
    req_ = inner_.irecv(peer_, {reinterpret_cast<std::byte*>(token_.data()), token_.size()}, tag);
  }
  std::optional<std::size_t> poll() override {
    if (!arrive_) {
      if (!req_.done() && !inner_.test(req_)) return std::nullopt;
      if (req_.bytes() != token_.size()) {
        throw RunError("emulated link: malformed token from rank " + std::to_string(peer_) + " (" +
                       std::to_string(req_.bytes()) + " bytes)");
      }
      bytes_ = tee::load_be64(token_.data());
      if (bytes_ > capacity_) {
        throw RunError("emulated link: message of " + std::to_string(bytes_) + " bytes from rank " +
                       std::to_string(peer_) + " is longer than the " + std::to_string(capacity_) +
                       "-byte receive buffer");
      }
      const Clock::time_point now = Clock::now();
      const Clock::time_point at{Clock::duration(static_cast<Clock::rep>(tee::load_be64(token_.data() + 8)))};
      arrive_ = (at > now + kPlausible || at + kPlausible < now) ? now : at;
    }
    if (Clock::now() < *arrive_) return std::nullopt;
    return bytes_;
  }

 private:
  Transport& inner_;
  std::size_t capacity_;
  int peer_;
  Token token_{};
  Request req_;
  std::size_t bytes_ = 0;
  std::optional<Clock::time_point> arrive_;
};

}  // namespace

EmulatedLinkTransport::EmulatedLinkTransport(Transport& inner, LinkLimit limit)
    : inner_(inner), pacer_(inner.size(), limit) {
  if (!(limit.gbytes_per_s > 0)) throw InputError("an emulated link needs a rate > 0 GB/s");
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
}

std::string EmulatedLinkTransport::name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "emulated-link(%g GB/s)", pacer_.limit().gbytes_per_s);
  return buf;
}

Request EmulatedLinkTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  auto state = std::make_unique<TokenSend>(inner_, data.size(), pacer_.reserve(peer, data.size()));
  state->post(peer, tag);
  return Request(std::move(state), Op::Send, peer, tag, data.size());
}

Request EmulatedLinkTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  auto state = std::make_unique<TokenRecv>(inner_, buffer.size(), peer);
  state->post(tag);
  return Request(std::move(state), Op::Recv, peer, tag, buffer.size());
}

}  // namespace tt::comm
