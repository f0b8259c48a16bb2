#include "comm/transport/virtual_ranks.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "base/error.h"

namespace tt::comm {

namespace detail {

// A posted receive waiting for its message; shared by the inbox's queue and the request.
struct LocalRecv {
  std::span<std::byte> buffer;
  bool matched = false;
  std::size_t bytes = 0;     // bytes that arrived
  std::size_t too_long = 0;  // size of a message that did not fit (0: it fitted)
};

// What one local rank receives from the ranks of its process (Note [Virtual ranks]): per (sender, tag),
// messages in send order and receives in posting order. One lock per receiver, so that senders to
// different ranks never wait for each other.
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

// Sends between ranks of one process are buffered: complete once posted.
class LocalSendState final : public RequestState {
 public:
  explicit LocalSendState(std::size_t bytes) : bytes_(bytes) {}
  std::optional<std::size_t> poll() override { return bytes_; }

 private:
  std::size_t bytes_;
};

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

// A request of an MpiTransport, seen under the virtual peer and tag (the MPI one names a process and
// an encoded tag). Destroying it destroys the inner request, which cancels or detaches it.
class RemoteState final : public RequestState {
 public:
  RemoteState(Transport& owner, Request inner) : owner_(owner), inner_(std::move(inner)) {}
  std::optional<std::size_t> poll() override {
    if (!owner_.test(inner_)) return std::nullopt;
    return inner_.bytes();
  }

 private:
  Transport& owner_;
  Request inner_;
};

struct Layout {
  int per_process;
  int process;
  int processes;
  int max_tag;  // the largest tag of ours that encodes within MPI's tags (remote traffic only)
};

class VirtualRankTransport final : public Transport {
 public:
  VirtualRankTransport(const Layout& layout, int local,
                       std::vector<std::unique_ptr<detail::LocalInbox>>& inboxes,
                       std::vector<std::unique_ptr<MpiTransport>>& remote)
      : layout_(layout), local_(local), inboxes_(inboxes), remote_(remote) {}

  int rank() const override { return layout_.process * layout_.per_process + local_; }
  int size() const override { return layout_.processes * layout_.per_process; }
  std::string name() const override { return "virtual"; }

  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    const auto [process, local] = locate(peer, tag, "send to");
    if (process == layout_.process) {
      inboxes_[static_cast<std::size_t>(local)]->send(rank(), tag, data);
      return Request(std::make_unique<LocalSendState>(data.size()), Op::Send, peer, tag, data.size());
    }
    MpiTransport& theirs = *remote_[static_cast<std::size_t>(local)];
    Request inner =
        theirs.isend_from(*remote_[static_cast<std::size_t>(local_)], process, data, encode(tag, local_));
    return Request(std::make_unique<RemoteState>(*this, std::move(inner)), Op::Send, peer, tag, data.size());
  }

  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    const auto [process, local] = locate(peer, tag, "receive from");
    if (process == layout_.process) {
      detail::LocalInbox& box = *inboxes_[static_cast<std::size_t>(local_)];
      auto r = box.post(peer, tag, buffer);
      return Request(std::make_unique<LocalRecvState>(box, rank(), peer, tag, std::move(r)), Op::Recv, peer,
                     tag, buffer.size());
    }
    MpiTransport& mine = *remote_[static_cast<std::size_t>(local_)];
    Request inner = mine.irecv(process, buffer, encode(tag, local));
    return Request(std::make_unique<RemoteState>(*this, std::move(inner)), Op::Recv, peer, tag,
                   buffer.size());
  }

 private:
  // (process, local index) of `peer`; refuses a rank outside the world or a tag MPI cannot carry.
  std::pair<int, int> locate(int peer, int tag, const char* what) const {
    if (peer < 0 || peer >= size() || tag < 0 || (layout_.processes > 1 && tag > layout_.max_tag))
      throw RunError("virtual rank " + std::to_string(rank()) + ": " + what + " rank " +
                     std::to_string(peer) + " with tag " + std::to_string(tag) + " names no rank of 0 .. " +
                     std::to_string(size() - 1) + " or a tag above " + std::to_string(layout_.max_tag));
    return {peer / layout_.per_process, peer % layout_.per_process};
  }
  // Note [Virtual ranks]: the MPI tag names the sending rank's local index.
  int encode(int tag, int sender_local) const { return tag * layout_.per_process + sender_local; }

  Layout layout_;
  int local_;
  std::vector<std::unique_ptr<detail::LocalInbox>>& inboxes_;
  std::vector<std::unique_ptr<MpiTransport>>& remote_;
};

int mpi_tag_ub(MPI_Comm comm) {
  int* ub = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &found), "MPI_Comm_get_attr (MPI_TAG_UB)");
  return found != 0 && ub != nullptr ? *ub : 32767;  // 32767: the least the standard guarantees
}

}  // namespace

VirtualRanks::VirtualRanks(MPI_Comm parent, int per_process, bool multiple) : per_process_(per_process) {
  if (per_process < 1) throw InputError("--ranks-per-process must be at least 1");
  check_mpi(MPI_Comm_rank(parent, &process_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(parent, &processes_), "MPI_Comm_size");
  const int max_tag = mpi_tag_ub(parent) / per_process - 1;
  if (processes_ > 1 && !multiple)
    throw InputError(
        "--ranks-per-process with several processes needs MPI_THREAD_MULTIPLE, which this MPI "
        "library does not provide; run one process (no mpirun) or --ranks-per-process 1");
  if (processes_ > 1 && max_tag < tags::kUser)
    throw InputError("--ranks-per-process " + std::to_string(per_process) +
                     " leaves too few MPI tags for the ranks' messages; host fewer ranks per process");
  const Layout layout{
      .per_process = per_process, .process = process_, .processes = processes_, .max_tag = max_tag};
  for (int k = 0; k < per_process; ++k) {
    inboxes_.push_back(std::make_unique<detail::LocalInbox>());
    if (processes_ > 1) remote_.push_back(std::make_unique<MpiTransport>(parent));  // collective
  }
  for (int k = 0; k < per_process; ++k)
    ranks_.push_back(std::make_unique<VirtualRankTransport>(layout, k, inboxes_, remote_));
}

VirtualRanks::~VirtualRanks() = default;

}  // namespace tt::comm
