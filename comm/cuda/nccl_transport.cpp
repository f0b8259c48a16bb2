#include "comm/cuda/nccl_transport.h"

#include <cstddef>
#include <string>

#include "base/error.h"

namespace tt::comm::cuda {

// One event per flushed group: every operation of the group is done once the event has fired.
struct IssuedGroup {
  Event done;
};

struct NcclTransport::PendingOp {
  Op op = Op::Send;
  int peer = 0;
  int tag = 0;
  std::byte* ptr = nullptr;  // device memory (a send's buffer is only read)
  std::size_t bytes = 0;
  std::shared_ptr<IssuedGroup> group;  // null until flushed
  bool abandoned = false;              // its request was dropped before the flush: do not issue it
};

namespace {

std::string describe(int rank, const NcclTransport::PendingOp& op);

class NcclRequestState final : public RequestState {
 public:
  NcclRequestState(NcclTransport& t, std::shared_ptr<NcclTransport::PendingOp> op)
      : t_(t), op_(std::move(op)) {}
  NcclRequestState(const NcclRequestState&) = delete;
  NcclRequestState& operator=(const NcclRequestState&) = delete;

  // NCCL cannot cancel: a request abandoned before completion (an error is unwinding) leaves the
  // communicator in an unknown state, so it is marked failed and aborted on destruction.
  ~NcclRequestState() override {
    if (done_) return;
    if (op_->group && cudaEventQuery(op_->group->done.get()) == cudaSuccess) return;  // finished unobserved
    if (!op_->group) op_->abandoned = true;
    t_.comm().mark_failed();
  }

  std::optional<std::size_t> poll() override {
    if (!op_->group) t_.flush();
    if (!op_->group->done.query()) {
      t_.comm().check_async(describe(t_.rank(), *op_));
      return std::nullopt;
    }
    done_ = true;
    return op_->bytes;  // NCCL receives are exact-size: the posted size is what arrived
  }

 private:
  NcclTransport& t_;
  std::shared_ptr<NcclTransport::PendingOp> op_;
  bool done_ = false;
};

std::string describe(int rank, const NcclTransport::PendingOp& op) {
  return "rank " + std::to_string(rank) + ": ncclS" + (op.op == Op::Send ? "end to" : "Recv from") +
         " rank " + std::to_string(op.peer) + " (tag " + std::to_string(op.tag) + ", " +
         std::to_string(op.bytes) + " bytes)";
}

}  // namespace

NcclTransport::NcclTransport(NcclComm& comm) : comm_(comm) {
  set_timeout(comm.timeout());
}

NcclTransport::~NcclTransport() {
  // Queued operations whose requests are gone were marked abandoned; ones still referenced by live
  // requests would dangle, so the communicator cannot be trusted any more.
  for (const auto& op : queue_) {
    if (!op->abandoned) comm_.mark_failed();
  }
}

Request NcclTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  // NCCL reads a send buffer only; the const_cast never leads to a write.
  return post(Op::Send, peer, const_cast<std::byte*>(data.data()), data.size(), tag);
}

Request NcclTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  return post(Op::Recv, peer, buffer.data(), buffer.size(), tag);
}

Request NcclTransport::post(Op op, int peer, std::byte* ptr, std::size_t bytes, int tag) {
  comm_.require_healthy(std::string("nccl ") + op_name(op));
  if (peer < 0 || peer >= size()) {
    throw RunError("rank " + std::to_string(rank()) + ": nccl " + op_name(op) + " with invalid peer " +
                   std::to_string(peer) + " (size " + std::to_string(size()) + ")");
  }
  if (bytes > 0 && ptr == nullptr) throw RunError("nccl " + std::string(op_name(op)) + ": null buffer");
  auto pending = std::make_shared<PendingOp>();
  pending->op = op;
  pending->peer = peer;
  pending->tag = tag;
  pending->ptr = ptr;
  pending->bytes = bytes;
  queue_.push_back(pending);
  return Request(std::make_unique<NcclRequestState>(*this, std::move(pending)), op, peer, tag, bytes);
}

void NcclTransport::flush() {
  if (queue_.empty()) return;
  comm_.require_healthy("nccl flush");
  // Self messages: NCCL pairs them inside the group, in order, and needs equal sizes. Checked up front
  // so a mismatch is an error here rather than a hang on the stream.
  std::vector<const PendingOp*> self_sends;
  std::vector<const PendingOp*> self_recvs;
  for (const auto& op : queue_) {
    if (op->abandoned || op->peer != rank()) continue;
    (op->op == Op::Send ? self_sends : self_recvs).push_back(op.get());
  }
  if (self_sends.size() != self_recvs.size()) {
    comm_.mark_failed();
    throw RunError("rank " + std::to_string(rank()) +
                   ": nccl transport: " + std::to_string(self_sends.size()) + " send(s) to self but " +
                   std::to_string(self_recvs.size()) +
                   " receive(s) from self posted before the wait; NCCL needs both in one group");
  }
  for (std::size_t i = 0; i < self_sends.size(); ++i) {
    if (self_sends[i]->bytes != self_recvs[i]->bytes) {
      comm_.mark_failed();
      throw RunError("rank " + std::to_string(rank()) + ": nccl transport: send to self of " +
                     std::to_string(self_sends[i]->bytes) + " bytes into a receive of " +
                     std::to_string(self_recvs[i]->bytes) + " bytes (NCCL needs equal sizes)");
    }
  }

  DeviceGuard guard(comm_.device());
  auto group = std::make_shared<IssuedGroup>();
  try {
    TT_COMM_NCCL_CHECK(ncclGroupStart());
    try {
      for (const auto& op : queue_) {
        // Zero-byte messages move nothing; both sides skip them, so matching stays aligned.
        if (op->abandoned || op->bytes == 0) continue;
        if (op->op == Op::Send) {
          TT_COMM_NCCL_CHECK(ncclSend(op->ptr, op->bytes, ncclUint8, op->peer, comm_.get(), comm_.stream()));
        } else {
          TT_COMM_NCCL_CHECK(ncclRecv(op->ptr, op->bytes, ncclUint8, op->peer, comm_.get(), comm_.stream()));
        }
      }
    } catch (...) {
      (void)ncclGroupEnd();  // close the group so NCCL's thread-local group state is consistent
      throw;
    }
    TT_COMM_NCCL_CHECK(ncclGroupEnd());
    group->done.record(comm_.stream());
  } catch (...) {
    comm_.mark_failed();
    throw;
  }
  for (auto& op : queue_) op->group = group;
  queue_.clear();
}

}  // namespace tt::comm::cuda
