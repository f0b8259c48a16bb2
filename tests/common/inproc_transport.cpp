#include "tests/common/inproc_transport.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "base/error.h"

namespace tt::comm {

const char* fault_name(FaultKind k) {
  switch (k) {
    case FaultKind::Drop:
      return "drop";
    case FaultKind::FlipBit:
      return "flip_bit";
    case FaultKind::Truncate:
      return "truncate";
    case FaultKind::Replay:
      return "replay";
    case FaultKind::Reorder:
      return "reorder";
    case FaultKind::Delay:
      return "delay";
    case FaultKind::Inflate:
      return "inflate";
  }
  return "unknown";
}

namespace detail {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

// A posted receive waiting for its message. Shared between the mailbox queue and the request.
struct PendingRecv {
  std::span<std::byte> buffer;
  bool matched = false;
  std::size_t bytes = 0;     // bytes that arrived
  std::size_t too_long = 0;  // size of a message that did not fit (0: it fitted)
};

struct Message {
  Bytes bytes;
  Clock::time_point visible_at;
};

// One (src, dst, tag) stream: messages in send order, receives in post order.
struct Queue {
  std::deque<Message> messages;
  std::deque<std::shared_ptr<PendingRecv>> receives;
};

// Per (src, dst) link: what the adversary remembers for replay and reorder.
struct Link {
  std::optional<Bytes> last;                  // the previous message's original payload
  std::optional<std::pair<int, Bytes>> held;  // (tag, payload) of a message held back by Reorder
};

class Mailbox {
 public:
  explicit Mailbox(FaultPlan plan) {
    for (const auto& r : plan.rules) rules_.push_back({r, 0, false});
  }

  void send(int src, int dst, int tag, std::span<const std::byte> data) {
    std::lock_guard lock(mu_);
    Message m{Bytes(data.begin(), data.end()), Clock::now()};
    Link& link = links_[{src, dst}];
    const Bytes original = m.bytes;
    bool enqueue = true;
    if (RuleState* rule = match(src, dst, tag)) enqueue = apply(*rule, link, tag, m);
    link.last = original;
    if (!enqueue) return;
    if (link.held) {
      // A Reorder is pending on this link: this message takes the held one's place, and the held one
      // goes after it. (On one tag this is a plain swap.)
      auto [held_tag, held_bytes] = std::move(*link.held);
      link.held.reset();
      push(src, dst, held_tag, std::move(m));
      push(src, dst, tag, Message{std::move(held_bytes), Clock::now()});
      return;
    }
    push(src, dst, tag, std::move(m));
  }

  std::shared_ptr<PendingRecv> post(int src, int dst, int tag, std::span<std::byte> buffer) {
    std::lock_guard lock(mu_);
    auto r = std::make_shared<PendingRecv>();
    r->buffer = buffer;
    Queue& q = queues_[{src, dst, tag}];
    q.receives.push_back(r);
    progress(q);
    return r;
  }

  // Returns the byte count once the receive has its message.
  std::optional<std::size_t> poll(int src, int dst, int tag, const PendingRecv& r) {
    std::lock_guard lock(mu_);
    if (!r.matched) progress(queues_[{src, dst, tag}]);  // a delayed message may have become visible
    if (!r.matched) return std::nullopt;
    if (r.too_long != 0)  // as the real transports refuse it (Note [Sizes before receives])
      throw FramingError(describe_oversize(dst, src, tag, r.too_long, r.buffer.size()));
    return r.bytes;
  }

  void cancel(int src, int dst, int tag, const std::shared_ptr<PendingRecv>& r) {
    std::lock_guard lock(mu_);
    if (r->matched) return;
    auto& rs = queues_[{src, dst, tag}].receives;
    rs.erase(std::remove(rs.begin(), rs.end(), r), rs.end());
  }

  std::vector<FaultKind> fired() const {
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  struct RuleState {
    FaultRule rule;
    std::size_t seen = 0;
    bool fired = false;
  };

  RuleState* match(int src, int dst, int tag) {
    for (auto& rs : rules_) {
      const FaultRule& r = rs.rule;
      if (rs.fired || (r.src != kAny && r.src != src) || (r.dst != kAny && r.dst != dst) ||
          (r.tag != kAny && r.tag != tag)) {
        continue;
      }
      if (rs.seen++ == r.index) return &rs;
    }
    return nullptr;
  }

  // Applies a fault to m; returns whether m should be enqueued now.
  bool apply(RuleState& rs, Link& link, int tag, Message& m) {
    const FaultRule& r = rs.rule;
    switch (r.kind) {
      case FaultKind::Drop:
        mark(rs);
        return false;
      case FaultKind::FlipBit:
        if (m.bytes.empty()) return true;
        m.bytes[(r.bit / 8) % m.bytes.size()] ^= static_cast<std::byte>(1U << (r.bit % 8));
        mark(rs);
        return true;
      case FaultKind::Truncate:
        if (m.bytes.empty()) return true;
        m.bytes.resize(std::min(r.keep_bytes, m.bytes.size() - 1));
        mark(rs);
        return true;
      case FaultKind::Replay:
        if (!link.last) return true;  // nothing to replay yet: the rule waits for no other message
        m.bytes = *link.last;
        mark(rs);
        return true;
      case FaultKind::Reorder:
        link.held.emplace(tag, std::move(m.bytes));
        mark(rs);
        return false;
      case FaultKind::Delay:
        m.visible_at = Clock::now() + r.delay;
        mark(rs);
        return true;
      case FaultKind::Inflate:
        m.bytes.resize(std::max(r.grow_to, m.bytes.size()));
        mark(rs);
        return true;
    }
    return true;
  }

  void mark(RuleState& rs) {
    rs.fired = true;
    fired_.push_back(rs.rule.kind);
  }

  void push(int src, int dst, int tag, Message m) {
    Queue& q = queues_[{src, dst, tag}];
    q.messages.push_back(std::move(m));
    progress(q);
  }

  // Hands visible messages to posted receives, both in order. A delayed message blocks the ones
  // behind it on its stream (like a delayed TCP segment).
  static void progress(Queue& q) {
    const auto now = Clock::now();
    while (!q.messages.empty() && !q.receives.empty() && q.messages.front().visible_at <= now) {
      Message& m = q.messages.front();
      PendingRecv& r = *q.receives.front();
      if (m.bytes.size() > r.buffer.size()) {
        r.too_long = m.bytes.size();
      } else {
        std::copy(m.bytes.begin(), m.bytes.end(), r.buffer.begin());
        r.bytes = m.bytes.size();
      }
      r.matched = true;
      q.messages.pop_front();
      q.receives.pop_front();
    }
  }

 private:
  mutable std::mutex mu_;
  std::vector<RuleState> rules_;
  std::vector<FaultKind> fired_;
  std::map<std::tuple<int, int, int>, Queue> queues_;
  std::map<std::pair<int, int>, Link> links_;
};

}  // namespace detail

namespace {

// Sends are buffered: complete as soon as they are posted.
class DoneState final : public RequestState {
 public:
  explicit DoneState(std::size_t bytes) : bytes_(bytes) {}
  std::optional<std::size_t> poll() override { return bytes_; }

 private:
  std::size_t bytes_;
};

class RecvState final : public RequestState {
 public:
  RecvState(detail::Mailbox& box, int src, int dst, int tag, std::shared_ptr<detail::PendingRecv> r)
      : box_(box), src_(src), dst_(dst), tag_(tag), r_(std::move(r)) {}
  RecvState(const RecvState&) = delete;
  RecvState& operator=(const RecvState&) = delete;
  // As MPI_Cancel: an unmatched receive leaves the queue and the message stays for others. Whether it
  // matched is read under the mailbox's lock (a sender's thread sets it).
  ~RecvState() override { box_.cancel(src_, dst_, tag_, r_); }
  std::optional<std::size_t> poll() override { return box_.poll(src_, dst_, tag_, *r_); }

 private:
  detail::Mailbox& box_;
  int src_, dst_, tag_;
  std::shared_ptr<detail::PendingRecv> r_;
};

class InprocTransport final : public Transport {
 public:
  InprocTransport(detail::Mailbox& box, int rank, int size) : box_(box), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "inproc"; }

  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    check_peer(peer);
    box_.send(rank_, peer, tag, data);
    return Request(std::make_unique<DoneState>(data.size()), Op::Send, peer, tag, data.size());
  }

  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    check_peer(peer);
    auto r = box_.post(peer, rank_, tag, buffer);
    return Request(std::make_unique<RecvState>(box_, peer, rank_, tag, std::move(r)), Op::Recv, peer, tag,
                   buffer.size());
  }

 private:
  void check_peer(int peer) const {
    if (peer < 0 || peer >= size_) {
      throw RunError("inproc transport: rank " + std::to_string(rank_) + " addressed rank " +
                     std::to_string(peer) + " of " + std::to_string(size_));
    }
  }
  detail::Mailbox& box_;
  int rank_;
  int size_;
};

}  // namespace

InprocWorld::InprocWorld(int ranks, FaultPlan plan, std::chrono::milliseconds timeout)
    : mailbox_(std::make_unique<detail::Mailbox>(std::move(plan))) {
  if (ranks < 1) throw RunError("inproc transport: need at least one rank");
  for (int r = 0; r < ranks; ++r) {
    transports_.push_back(std::make_unique<InprocTransport>(*mailbox_, r, ranks));
    transports_.back()->set_timeout(timeout);
  }
}

InprocWorld::~InprocWorld() = default;

std::vector<std::exception_ptr> InprocWorld::run(const std::function<void(Transport&)>& fn) {
  std::vector<std::exception_ptr> errors(transports_.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t r = 0; r < transports_.size(); ++r) {
      threads.emplace_back([&, r] {
        try {
          fn(*transports_[r]);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
  }  // jthreads join here
  return errors;
}

std::vector<FaultKind> InprocWorld::faults_fired() const {
  return mailbox_->fired();
}

}  // namespace tt::comm
