#include "platform/emulated/emulated_link_transport.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::platform {
namespace {

using Clock = std::chrono::steady_clock;

// Arrival times further than this from the receiver's clock come from another host's clock.
constexpr auto kPlausible = std::chrono::seconds(60);

std::uint64_t ticks(Clock::time_point t) {
  return static_cast<std::uint64_t>(t.time_since_epoch().count());
}

// Done when the token went out AND (wall clock) the link has carried the payload.
class TokenSend final : public comm::RequestState {
 public:
  TokenSend(comm::Transport& inner, std::vector<std::byte> token, std::optional<Clock::time_point> done_at)
      : inner_(inner), token_(std::move(token)), done_at_(done_at) {}
  // The token must stay put while the inner send reads it: post only once the object has its address.
  void post(int peer, int tag) { req_ = inner_.isend(peer, token_, tag); }
  std::optional<std::size_t> poll() override {
    if (!req_.done() && !inner_.test(req_)) return std::nullopt;
    if (done_at_ && Clock::now() < *done_at_) return std::nullopt;
    return tee::load_be64(reinterpret_cast<const std::uint8_t*>(token_.data()));
  }

 private:
  comm::Transport& inner_;
  std::vector<std::byte> token_;
  std::optional<Clock::time_point> done_at_;  // wall clock only
  comm::Request req_;
};

// Done when the token arrived and (wall clock) its payload's arrival time has passed, or (virtual
// time) at once, the receiver's time moved to the arrival. Reports the payload length.
class TokenRecv final : public comm::RequestState {
 public:
  TokenRecv(comm::Transport& inner, std::span<std::byte> buffer, int peer, std::size_t token_bytes,
            std::size_t carry, RunClock* clock, const comm::LinkPacer& pacer, Profiler* prof)
      : inner_(inner),
        buffer_(buffer),
        peer_(peer),
        carry_(carry),
        clock_(clock),
        pacer_(pacer),
        prof_(prof),
        token_(token_bytes) {}
  void post(int tag) {
    tag_ = tag;
    req_ = inner_.irecv(peer_, token_, tag);
  }
  std::optional<std::size_t> poll() override {
    if (!arrive_) {
      if (!req_.done() && !inner_.test(req_)) return std::nullopt;
      arrived();
      if (clock_ != nullptr) {
        report_wait();
        clock_->advance_to(*arrive_);
        return bytes_;
      }
    }
    if (Clock::now() < *arrive_) return std::nullopt;
    return bytes_;
  }

 private:
  // Reads the token: length, arrival and carried bytes. A token cut short (an adversary's truncation)
  // reports fewer bytes than were sent, so the collective sees a short message.
  void arrived() {
    const std::size_t got = req_.bytes();
    if (got < EmulatedLinkTransport::kHeaderBytes) {
      bytes_ = 0;
      arrive_ = clock_ != nullptr ? clock_->now() : Clock::now();
      return;
    }
    const auto* t = reinterpret_cast<const std::uint8_t*>(token_.data());
    const std::uint64_t length = tee::load_be64(t);
    if (length > buffer_.size())  // Note [Sizes before receives]: the token says so; nothing is copied
      throw FramingError(comm::describe_oversize(inner_.rank(), peer_, tag_, length, buffer_.size()));
    bytes_ = static_cast<std::size_t>(length);
    const std::size_t carried = std::min<std::size_t>(carry_, bytes_);
    const std::size_t came = std::min(got - EmulatedLinkTransport::kHeaderBytes, carried);
    if (came > 0) std::memcpy(buffer_.data(), token_.data() + EmulatedLinkTransport::kHeaderBytes, came);
    bytes_ -= carried - came;
    const Clock::time_point at{Clock::duration(static_cast<Clock::rep>(tee::load_be64(t + 8)))};
    if (clock_ != nullptr) {
      arrive_ = at;
      return;
    }
    const Clock::time_point now = Clock::now();
    arrive_ = (at > now + kPlausible || at + kPlausible < now) ? now : at;
  }

  // Virtual time: of the wait until the arrival, the last link_seconds(peer, bytes) were the bytes crossing
  // the link; anything before that was the neighbour not having sent yet.
  void report_wait() const {
    if (prof_ == nullptr) return;
    const double wait = std::chrono::duration<double>(*arrive_ - clock_->now()).count();
    if (!(wait > 0)) return;
    const double link = std::min(wait, pacer_.link_seconds(peer_, bytes_));
    prof_->add_time(Phase::Link, link);
    prof_->add_time(Phase::Wait, wait - link);
  }

  comm::Transport& inner_;
  std::span<std::byte> buffer_;
  int peer_;
  int tag_ = 0;
  std::size_t carry_;
  RunClock* clock_;
  const comm::LinkPacer& pacer_;
  Profiler* prof_;
  std::vector<std::byte> token_;
  comm::Request req_;
  std::size_t bytes_ = 0;
  std::optional<Clock::time_point> arrive_;
};

}  // namespace

EmulatedLinkTransport::EmulatedLinkTransport(comm::Transport& inner, comm::LinkLimit limit, RunClock* clock,
                                             std::size_t carry, Profiler* profiler)
    : EmulatedLinkTransport(inner,
                            std::vector<comm::LinkLimit>(static_cast<std::size_t>(inner.size()), limit),
                            clock, carry, profiler, "") {}

EmulatedLinkTransport::EmulatedLinkTransport(comm::Transport& inner, std::vector<comm::LinkLimit> per_peer,
                                             RunClock* clock, std::size_t carry, Profiler* profiler,
                                             std::string label)
    : inner_(inner),
      clock_(clock != nullptr && clock->is_virtual() ? clock : nullptr),
      carry_(clock_ != nullptr ? carry : 0),
      prof_(profiler),
      pacer_(std::move(per_peer), clock_),
      label_(std::move(label)) {
  for (int p = 0; p < inner.size(); ++p) {
    if (!(pacer_.limit(p).gbytes_per_s > 0)) throw InputError("an emulated link needs a rate > 0 GB/s");
  }
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
}

std::string EmulatedLinkTransport::name() const {
  if (!label_.empty()) return "emulated-link(" + label_ + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, "emulated-link(%g GB/s)", pacer_.limit().gbytes_per_s);
  return buf;
}

comm::Request EmulatedLinkTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  const Clock::time_point arrive = pacer_.reserve(peer, data.size());
  std::vector<std::byte> token(token_bytes());
  auto* t = reinterpret_cast<std::uint8_t*>(token.data());
  tee::store_be64(t, data.size());
  tee::store_be64(t + 8, ticks(arrive));
  const std::size_t carried = std::min(carry_, data.size());
  if (carried > 0) std::memcpy(token.data() + kHeaderBytes, data.data(), carried);
  token.resize(kHeaderBytes + std::max(carried, carry_ > 0 ? std::size_t{0} : kMinBody));
  // Virtual time: the sender does not wait for the link (its bookings already queue its messages).
  auto state = std::make_unique<TokenSend>(inner_, std::move(token),
                                           clock_ != nullptr ? std::nullopt : std::optional(arrive));
  state->post(peer, tag);
  return comm::Request(std::move(state), comm::Op::Send, peer, tag, data.size());
}

comm::Request EmulatedLinkTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  auto state =
      std::make_unique<TokenRecv>(inner_, buffer, peer, token_bytes(), carry_, clock_, pacer_, prof_);
  state->post(tag);
  return comm::Request(std::move(state), comm::Op::Recv, peer, tag, buffer.size());
}

}  // namespace tt::platform
