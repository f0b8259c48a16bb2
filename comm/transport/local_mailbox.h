// LocalMailbox: the in-process mailbox between ranks that are threads of one process, with a Transport
// over it for a world that is all in this process (LocalWorld). The production user is VirtualRanks
// (virtual_ranks.h: `--ranks-per-process`, which adds MPI for ranks of other processes); the tests run
// their ranks on LocalWorld's transports, with their faults injected on top
// (tests/common/inproc_transport.h).
//
// Semantics as MpiTransport's (comm/transport.h): per (sender, receiver, tag), messages are matched in
// send order to receives in posting order; a send copies its bytes and completes at once (as a buffered
// MPI send); a message longer than its receive is refused unread (FramingError, Note [Sizes before
// receives]); a shorter one completes with its real length; a receive destroyed unmatched leaves its
// queue and the message stays for the next one (as MPI_Cancel).
#pragma once
#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "comm/transport.h"

namespace tt::comm {

namespace detail {
class LocalInbox;
}

class LocalMailbox {
 public:
  // Inboxes for ranks first .. first + ranks - 1, named as the world names them.
  LocalMailbox(int first, int ranks);
  ~LocalMailbox();
  LocalMailbox(const LocalMailbox&) = delete;
  LocalMailbox& operator=(const LocalMailbox&) = delete;

  int first() const { return first_; }
  int ranks() const { return static_cast<int>(inboxes_.size()); }
  // From rank `src` to rank `dst` (both in this mailbox): queued at once, complete at once.
  Request isend(int src, int dst, std::span<const std::byte> data, int tag);
  // Rank `dst` posts a receive for `src`'s next message on `tag`.
  Request irecv(int dst, int src, std::span<std::byte> buffer, int tag);

 private:
  detail::LocalInbox& inbox(int rank);
  int first_;
  std::vector<std::unique_ptr<detail::LocalInbox>> inboxes_;  // (ranks,): one per receiver
};

// `ranks` ranks of a world that is all in this process, each with a Transport over one LocalMailbox.
class LocalWorld {
 public:
  // Throws RunError for ranks < 1.
  explicit LocalWorld(int ranks);
  int size() const { return mailbox_.ranks(); }
  Transport& transport(int rank) { return *transports_.at(static_cast<std::size_t>(rank)); }

 private:
  LocalMailbox mailbox_;
  std::vector<std::unique_ptr<Transport>> transports_;  // (ranks,)
};

}  // namespace tt::comm
