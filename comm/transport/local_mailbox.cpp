#include "comm/transport/local_mailbox.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "comm/completed_request.h"

namespace tt::comm {

namespace detail {

// A posted receive waiting for its message; shared by the inbox's queue and the request.
struct LocalRecv {
  std::span<std::byte> buffer;
  bool matched = false;
  std::size_t bytes = 0;     // bytes that arrived
  std::size_t too_long = 0;  // size of a message that did not fit (0: it fitted)
};

// What one rank receives from the ranks of its process: per (sender, tag), messages in send order and
// receives in posting order. One lock per receiver, so that senders to different ranks never wait for
// each other.
class LocalInbox {
 public:
  void send(int src, int tag, std::span<const std::byte> data) {
    std::lock_guard lock(mu_);
    Queue& q = queues_[{src, tag}];
    q.messages.emplace_back(data.begin(), data.end());
    progress(q);
  }

  std::shared_ptr<LocalRecv> post(int src, int tag, std::span<std::byte> buffer) {
    std::lock_guard lock(mu_);
    auto r = std::make_shared<LocalRecv>();
    r->buffer = buffer;
    Queue& q = queues_[{src, tag}];
    q.receives.push_back(r);
    progress(q);
    return r;
  }

  // The byte count once the receive has its message; a message that did not fit is refused unread.
  std::optional<std::size_t> poll(int self, int src, int tag, const LocalRecv& r) {
    std::lock_guard lock(mu_);
    if (!r.matched) return std::nullopt;
    if (r.too_long != 0) throw FramingError(describe_oversize(self, src, tag, r.too_long, r.buffer.size()));
    return r.bytes;
  }

  // As MPI_Cancel: an unmatched receive leaves its queue and the message stays for the next one.
  void cancel(int src, int tag, const std::shared_ptr<LocalRecv>& r) {
    std::lock_guard lock(mu_);
    if (r->matched) return;
    auto& rs = queues_[{src, tag}].receives;
    rs.erase(std::remove(rs.begin(), rs.end(), r), rs.end());
  }

 private:
  struct Queue {
    std::deque<std::vector<std::byte>> messages;
    std::deque<std::shared_ptr<LocalRecv>> receives;
  };

  static void progress(Queue& q) {
    while (!q.messages.empty() && !q.receives.empty()) {
      const std::vector<std::byte>& m = q.messages.front();
      LocalRecv& r = *q.receives.front();
      if (m.size() > r.buffer.size()) {
        r.too_long = m.size();
      } else {
        std::copy(m.begin(), m.end(), r.buffer.begin());
        r.bytes = m.size();
      }
      r.matched = true;
      q.messages.pop_front();
      q.receives.pop_front();
    }
  }

  std::mutex mu_;
  std::map<std::pair<int, int>, Queue> queues_;  // (sender's rank, tag)
};

}  // namespace detail

namespace {

class LocalRecvState final : public RequestState {
 public:
  LocalRecvState(detail::LocalInbox& box, int self, int src, int tag, std::shared_ptr<detail::LocalRecv> r)
      : box_(box), self_(self), src_(src), tag_(tag), r_(std::move(r)) {}
  LocalRecvState(const LocalRecvState&) = delete;
  LocalRecvState& operator=(const LocalRecvState&) = delete;
  ~LocalRecvState() override { box_.cancel(src_, tag_, r_); }
  std::optional<std::size_t> poll() override { return box_.poll(self_, src_, tag_, *r_); }

 private:
  detail::LocalInbox& box_;
  int self_, src_, tag_;
  std::shared_ptr<detail::LocalRecv> r_;
};

// A rank of a LocalWorld: every peer is in the mailbox.
class LocalTransport final : public Transport {
 public:
  LocalTransport(LocalMailbox& box, int rank) : box_(box), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return box_.ranks(); }
  std::string name() const override { return "inproc"; }
  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    return box_.isend(rank_, peer, data, tag);
  }
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    return box_.irecv(rank_, peer, buffer, tag);
  }

 private:
  LocalMailbox& box_;
  int rank_;
};

}  // namespace

LocalMailbox::LocalMailbox(int first, int ranks) : first_(first) {
  for (int k = 0; k < ranks; ++k) inboxes_.push_back(std::make_unique<detail::LocalInbox>());
}

LocalMailbox::~LocalMailbox() = default;

detail::LocalInbox& LocalMailbox::inbox(int rank) {
  if (rank < first_ || rank >= first_ + ranks())
    throw RunError("in-process mailbox: rank " + std::to_string(rank) + " is not one of ranks " +
                   std::to_string(first_) + " .. " + std::to_string(first_ + ranks() - 1));
  return *inboxes_[static_cast<std::size_t>(rank - first_)];
}

Request LocalMailbox::isend(int src, int dst, std::span<const std::byte> data, int tag) {
  inbox(dst).send(src, tag, data);
  return Request(std::make_unique<CompletedRequest>(data.size()), Op::Send, dst, tag, data.size());
}

Request LocalMailbox::irecv(int dst, int src, std::span<std::byte> buffer, int tag) {
  inbox(src);  // a rank of this mailbox
  detail::LocalInbox& box = inbox(dst);
  auto r = box.post(src, tag, buffer);
  return Request(std::make_unique<LocalRecvState>(box, dst, src, tag, std::move(r)), Op::Recv, src, tag,
                 buffer.size());
}

LocalWorld::LocalWorld(int ranks) : mailbox_(0, ranks) {
  if (ranks < 1) throw RunError("in-process world: need at least one rank");
  for (int r = 0; r < ranks; ++r) transports_.push_back(std::make_unique<LocalTransport>(mailbox_, r));
}

}  // namespace tt::comm
