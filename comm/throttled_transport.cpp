#include "comm/throttled_transport.h"

#include <algorithm>
#include <optional>

#include "engine/core/error.h"

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

ThrottledTransport::ThrottledTransport(Transport& inner, LinkLimit limit)
    : inner_(inner), limit_(limit), link_free_(static_cast<std::size_t>(std::max(0, inner.size()))) {
  if (limit_.gbytes_per_s < 0 || limit_.latency.count() < 0) {
    throw InputError("link limit must be >= 0 (GB/s and latency); got " +
                     std::to_string(limit_.gbytes_per_s) + " GB/s");
  }
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
}

double ThrottledTransport::link_seconds(std::size_t bytes) const {
  const double wire =
      limit_.gbytes_per_s > 0 ? static_cast<double>(bytes) / (limit_.gbytes_per_s * 1e9) : 0.0;
  return wire + std::chrono::duration<double>(limit_.latency).count();
}

Request ThrottledTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  Request inner = inner_.isend(peer, data, tag);
  const auto cost =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(link_seconds(data.size())));
  Clock::time_point done_at;
  {
    // Token bucket without burst: the link carries one message after another at the given rate.
    std::lock_guard lock(mu_);
    auto& free_at = link_free_.at(static_cast<std::size_t>(peer));
    done_at = std::max(Clock::now(), free_at) + cost;
    free_at = done_at;
  }
  return Request(std::make_unique<ThrottledSend>(inner_, std::move(inner), done_at), Op::Send, peer, tag,
                 data.size());
}

Request ThrottledTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  return inner_.irecv(peer, buffer, tag);
}

}  // namespace tt::comm
