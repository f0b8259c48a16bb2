#include "tests/common/inproc_transport.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "base/error.h"
#include "comm/completed_request.h"
#include "comm/transport/local_mailbox.h"

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

// The adversary between the ranks' sends and the production mailbox (comm/transport/local_mailbox.h):
// it applies the plan's faults to what is sent, then hands each message to the mailbox, at once or,
// when delayed, once its time has come (a delayed message holds back the ones behind it on its
// (src, dst, tag) stream, like a delayed TCP segment). Due messages are handed over whenever any rank
// sends or polls a receive.
class FaultWire {
 public:
  FaultWire(FaultPlan plan, LocalWorld& world) : world_(world) {
    for (const auto& r : plan.rules) rules_.push_back({r, 0, false});
  }

  void send(int src, int dst, int tag, std::span<const std::byte> data) {
    const std::lock_guard lock(mu_);
    hand_over_due();
    Bytes m(data.begin(), data.end());
    Link& link = links_[{src, dst}];
    const Bytes original = m;
    Clock::time_point visible = Clock::now();
    bool enqueue = true;
    if (RuleState* rule = match(src, dst, tag)) enqueue = apply(*rule, link, tag, m, visible);
    link.last = original;
    if (!enqueue) return;
    if (link.held) {
      // A Reorder is pending on this link: this message takes the held one's place, and the held one
      // goes after it. (On one tag this is a plain swap.)
      auto [held_tag, held_bytes] = std::move(*link.held);
      link.held.reset();
      deliver(src, dst, tag, std::move(m), visible);
      deliver(src, dst, held_tag, std::move(held_bytes), Clock::now());
      return;
    }
    deliver(src, dst, tag, std::move(m), visible);
  }

  void poll() {
    const std::lock_guard lock(mu_);
    hand_over_due();
  }

  std::vector<FaultKind> fired() const {
    const std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  struct RuleState {
    FaultRule rule;
    std::size_t seen = 0;
    bool fired = false;
  };
  // Per (src, dst) link: what the adversary remembers for replay and reorder.
  struct Link {
    std::optional<Bytes> last;                  // the previous message's original payload
    std::optional<std::pair<int, Bytes>> held;  // (tag, payload) of a message held back by Reorder
  };
  struct Delayed {
    Bytes bytes;
    Clock::time_point visible_at;
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

  // Applies a fault to m; returns whether m should be sent now (at `visible`).
  bool apply(RuleState& rs, Link& link, int tag, Bytes& m, Clock::time_point& visible) {
    const FaultRule& r = rs.rule;
    switch (r.kind) {
      case FaultKind::Drop:
        mark(rs);
        return false;
      case FaultKind::FlipBit:
        if (m.empty()) return true;
        m[(r.bit / 8) % m.size()] ^= static_cast<std::byte>(1U << (r.bit % 8));
        mark(rs);
        return true;
      case FaultKind::Truncate:
        if (m.empty()) return true;
        m.resize(std::min(r.keep_bytes, m.size() - 1));
        mark(rs);
        return true;
      case FaultKind::Replay:
        if (!link.last) return true;  // nothing to replay yet: the rule waits for no other message
        m = *link.last;
        mark(rs);
        return true;
      case FaultKind::Reorder:
        link.held.emplace(tag, std::move(m));
        mark(rs);
        return false;
      case FaultKind::Delay:
        visible = Clock::now() + r.delay;
        mark(rs);
        return true;
      case FaultKind::Inflate:
        m.resize(std::max(r.grow_to, m.size()));
        mark(rs);
        return true;
    }
    return true;
  }

  void mark(RuleState& rs) {
    rs.fired = true;
    fired_.push_back(rs.rule.kind);
  }

  // Into the mailbox now, or behind a delayed message of its stream.
  void deliver(int src, int dst, int tag, Bytes m, Clock::time_point visible) {
    std::deque<Delayed>& stream = delayed_[{src, dst, tag}];
    if (stream.empty() && visible <= Clock::now()) {
      world_.transport(src).isend(dst, m, tag);  // copied into the mailbox: complete at once
      return;
    }
    stream.push_back({std::move(m), visible});
  }

  void hand_over_due() {
    const auto now = Clock::now();
    for (auto& [key, stream] : delayed_) {
      const auto [src, dst, tag] = key;
      while (!stream.empty() && stream.front().visible_at <= now) {
        world_.transport(src).isend(dst, stream.front().bytes, tag);
        stream.pop_front();
      }
    }
  }

  LocalWorld& world_;
  mutable std::mutex mu_;
  std::vector<RuleState> rules_;
  std::vector<FaultKind> fired_;
  std::map<std::pair<int, int>, Link> links_;
  std::map<std::tuple<int, int, int>, std::deque<Delayed>> delayed_;  // (src, dst, tag) streams held back
};

}  // namespace detail

namespace {

// A receive posted in the mailbox; each poll first hands over the delayed messages that are due.
// Destroying it destroys the mailbox's request, which cancels it if unmatched.
class RecvState final : public RequestState {
 public:
  RecvState(detail::FaultWire& wire, Transport& inner, Request r)
      : wire_(wire), inner_(inner), r_(std::move(r)) {}
  std::optional<std::size_t> poll() override {
    wire_.poll();
    if (!inner_.test(r_)) return std::nullopt;
    return r_.bytes();
  }

 private:
  detail::FaultWire& wire_;
  Transport& inner_;
  Request r_;
};

// A rank's transport: its sends pass the fault wire, its receives are the mailbox's.
class InprocTransport final : public Transport {
 public:
  InprocTransport(detail::FaultWire& wire, Transport& inner) : wire_(wire), inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "inproc"; }

  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    check_peer(peer);
    wire_.send(rank(), peer, tag, data);
    return Request(std::make_unique<CompletedRequest>(data.size()), Op::Send, peer, tag, data.size());
  }

  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    check_peer(peer);
    return Request(std::make_unique<RecvState>(wire_, inner_, inner_.irecv(peer, buffer, tag)), Op::Recv,
                   peer, tag, buffer.size());
  }

 private:
  void check_peer(int peer) const {
    if (peer < 0 || peer >= size()) {
      throw RunError("inproc transport: rank " + std::to_string(rank()) + " addressed rank " +
                     std::to_string(peer) + " of " + std::to_string(size()));
    }
  }
  detail::FaultWire& wire_;
  Transport& inner_;
};

}  // namespace

InprocWorld::InprocWorld(int ranks, FaultPlan plan, std::chrono::milliseconds timeout) {
  if (ranks < 1) throw RunError("inproc transport: need at least one rank");
  world_ = std::make_unique<LocalWorld>(ranks);
  wire_ = std::make_unique<detail::FaultWire>(std::move(plan), *world_);
  for (int r = 0; r < ranks; ++r) {
    transports_.push_back(std::make_unique<InprocTransport>(*wire_, world_->transport(r)));
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
  return wire_->fired();
}

}  // namespace tt::comm
