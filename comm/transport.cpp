#include "comm/transport.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "base/error.h"

namespace tt::comm {

const char* op_name(Op op) {
  return op == Op::Send ? "send" : "receive";
}

std::string describe_timeout(int rank, const Request& r, std::chrono::milliseconds timeout) {
  std::ostringstream os;
  os << "rank " << rank << ": " << op_name(r.op()) << (r.op() == Op::Send ? " to" : " from") << " rank "
     << r.peer() << " (tag " << r.tag() << ", " << r.posted_bytes() << " bytes) did not complete within "
     << static_cast<double>(timeout.count()) / 1000.0 << " s; the peer, or the link to it, is dead, stuck or held up";
  return os.str();
}

std::string describe_oversize(int rank, int peer, int tag, std::size_t bytes, std::size_t posted) {
  return "rank " + std::to_string(rank) + ": a message of " + std::to_string(bytes) + " bytes from rank " +
         std::to_string(peer) + " (tag " + std::to_string(tag) + ") is longer than the receive buffer of " +
         std::to_string(posted) + " bytes; refused unread";
}

void throw_wait_failure(const std::exception& e, const std::string& what, bool sealed) {
  if (dynamic_cast<const FramingError*>(&e) == nullptr) throw RunError(what);
  if (sealed) throw IntegrityError(what + " (a sealed message out of its place)");
  throw FramingError(what);  // the caller may know the bytes are attestation (secure_session.cpp)
}

Request Transport::irecv_sum(int peer, std::span<float> /*acc*/, int /*tag*/) {
  throw RunError("the " + name() + " transport cannot add a message from rank " + std::to_string(peer) +
                 " on receipt (sums_on_receive is false)");
}

bool Transport::test(Request& r) {
  if (r.done_) return true;
  if (!r.state_) return false;  // default-constructed handle: nothing was posted
  if (auto n = r.state_->poll()) {
    r.bytes_ = *n;
    r.done_ = true;
    r.state_.reset();  // releases the implementation's slot right away
    return true;
  }
  return false;
}

std::size_t Transport::wait(Request& r) {
  return wait(r, timeout_);
}

std::size_t Transport::wait(Request& r, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  if (test(r)) return r.bytes_;
  if (!r.state_) return 0;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  auto nap = std::chrono::microseconds(1);
  while (!test(r)) {
    const auto now = Clock::now();
    if (now >= deadline) throw RunError(describe_timeout(rank(), r, timeout));
    if (policy_.mode == WaitMode::Busy) continue;
    if (now - start < policy_.spin) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, policy_.max_sleep);
    }
  }
  return r.bytes_;
}

}  // namespace tt::comm
