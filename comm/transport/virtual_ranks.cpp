#include "comm/transport/virtual_ranks.h"

#include <optional>
#include <utility>

#include "base/error.h"

namespace tt::comm {

namespace {

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
  VirtualRankTransport(const Layout& layout, int local, LocalMailbox& mailbox,
                       std::vector<std::unique_ptr<MpiTransport>>& remote)
      : layout_(layout), local_(local), mailbox_(mailbox), remote_(remote) {}

  int rank() const override { return layout_.process * layout_.per_process + local_; }
  int size() const override { return layout_.processes * layout_.per_process; }
  std::string name() const override { return "virtual"; }

  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    const auto [process, local] = locate(peer, tag, "send to");
    if (process == layout_.process) return mailbox_.isend(rank(), peer, data, tag);
    MpiTransport& theirs = *remote_[static_cast<std::size_t>(local)];
    Request inner =
        theirs.isend_from(*remote_[static_cast<std::size_t>(local_)], process, data, encode(tag, local_));
    return Request(std::make_unique<RemoteState>(*this, std::move(inner)), Op::Send, peer, tag, data.size());
  }

  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    const auto [process, local] = locate(peer, tag, "receive from");
    if (process == layout_.process) return mailbox_.irecv(rank(), peer, buffer, tag);
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
  LocalMailbox& mailbox_;
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
  mailbox_ = std::make_unique<LocalMailbox>(first(), per_process);
  for (int k = 0; k < per_process && processes_ > 1; ++k)
    remote_.push_back(std::make_unique<MpiTransport>(parent));  // collective
  for (int k = 0; k < per_process; ++k)
    ranks_.push_back(std::make_unique<VirtualRankTransport>(layout, k, *mailbox_, remote_));
}

VirtualRanks::~VirtualRanks() = default;

}  // namespace tt::comm
