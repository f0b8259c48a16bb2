#include "comm/transport/throttled_transport.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/error.h"

namespace tt::comm {
namespace {

using Clock = std::chrono::steady_clock;

// A send that is done when the inner send is done AND the emulated link has carried its bytes.
class ThrottledSend final : public RequestState {
 public:
  ThrottledSend(Transport& inner, Request req, Clock::time_point done_at)
      : inner_(inner), req_(std::move(req)), done_at_(done_at) {}
  std::optional<std::size_t> poll() override {
    if (!req_.done() && !inner_.test(req_)) return std::nullopt;
    if (Clock::now() < done_at_) return std::nullopt;
    return req_.bytes();
  }

 private:
  Transport& inner_;
  Request req_;
  Clock::time_point done_at_;
};

}  // namespace

LinkPacer::LinkPacer(int peers, LinkLimit limit, const RunClock* clock)
    : LinkPacer(std::vector<LinkLimit>(static_cast<std::size_t>(std::max(1, peers)), limit), clock) {}

LinkPacer::LinkPacer(std::vector<LinkLimit> per_peer, const RunClock* clock)
    : limits_(std::move(per_peer)), clock_(clock), link_free_(limits_.size()) {
  if (limits_.empty()) limits_.push_back({});
  for (const LinkLimit& l : limits_) {
    if (l.gbytes_per_s < 0 || l.latency.count() < 0) {
      throw InputError("link limit must be >= 0 (GB/s and latency); got " + std::to_string(l.gbytes_per_s) +
                       " GB/s");
    }
  }
}

double LinkPacer::link_seconds(int peer, std::size_t bytes) const {
  const LinkLimit& l = limit(peer);
  const double wire = l.gbytes_per_s > 0 ? static_cast<double>(bytes) / (l.gbytes_per_s * 1e9) : 0.0;
  return wire + std::chrono::duration<double>(l.latency).count();
}

Clock::time_point LinkPacer::reserve(int peer, std::size_t bytes) {
  const auto cost =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(link_seconds(peer, bytes)));
  // Token bucket without burst: the link carries one message after another at the given rate.
  std::lock_guard lock(mu_);
  auto& free_at = link_free_.at(static_cast<std::size_t>(peer));
  const Clock::time_point done_at =
      std::max(clock_ != nullptr ? clock_->now() : Clock::now(), free_at) + cost;
  free_at = done_at;
  return done_at;
}

ThrottledTransport::ThrottledTransport(Transport& inner, LinkLimit limit)
    : inner_(inner), pacer_(inner.size(), limit) {
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
}

Request ThrottledTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  Request inner = inner_.isend(peer, data, tag);
  const Clock::time_point done_at = pacer_.reserve(peer, data.size());
  return Request(std::make_unique<ThrottledSend>(inner_, std::move(inner), done_at), Op::Send, peer, tag,
                 data.size());
}

Request ThrottledTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  return inner_.irecv(peer, buffer, tag);
}

}  // namespace tt::comm
