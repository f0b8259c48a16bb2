#include "comm/transport/mpi_transport.h"

#include <chrono>
#include <climits>
#include <thread>

#include "base/error.h"

namespace tt::comm {

namespace {

int to_mpi_count(std::size_t bytes, const char* what) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw RunError(std::string("mpi transport: ") + what + " of " + std::to_string(bytes) +
                   " bytes exceeds MPI's int count; use smaller segments");
  }
  return static_cast<int>(bytes);
}

class MpiRequestState final : public RequestState {
 public:
  MpiRequestState(Op op, std::size_t posted) : op_(op), posted_(posted) {}
  MpiRequestState(const MpiRequestState&) = delete;
  MpiRequestState& operator=(const MpiRequestState&) = delete;

  // A pending request is being abandoned (an error is unwinding). Cancel a receive so it cannot match a
  // later message. A send is given a bounded time to finish before it is detached: its buffer (a
  // sealed message the ring owns) is freed by the unwinding, and a detached rendezvous send would carry
  // whatever then sits in that memory, so the peer would report a second, spurious "tampered" message.
  ~MpiRequestState() override {
    if (req_ == MPI_REQUEST_NULL) return;
    if (op_ == Op::Recv) MPI_Cancel(&req_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(op_ == Op::Recv ? 50 : 200);
    while (req_ != MPI_REQUEST_NULL && std::chrono::steady_clock::now() < deadline) {
      int flag = 0;
      MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
      if (flag == 0) std::this_thread::yield();
    }
    if (req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
  }

  std::optional<std::size_t> poll() override {
    int flag = 0;
    MPI_Status status;
    check_mpi(MPI_Test(&req_, &flag, &status), op_ == Op::Recv ? "MPI_Test (receive)" : "MPI_Test (send)");
    if (flag == 0) return std::nullopt;
    if (op_ == Op::Send) return posted_;
    int count = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    return static_cast<std::size_t>(count);
  }

  MPI_Request* handle() { return &req_; }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
  Op op_;
  std::size_t posted_;
};

}  // namespace

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RunError(what + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "unknown";
  }
}

MpiSession::MpiSession(int* argc, char*** argv, int required) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized != 0) {
    MPI_Query_thread(&provided_);
    return;
  }
  // MPI may provide less than asked; we record it and let the caller decide (supports_comm_thread()).
  check_mpi(MPI_Init_thread(argc, argv, required, &provided_), "MPI_Init_thread");
  owns_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
}

int MpiSession::world_rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiSession::world_size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

MpiTransport::MpiTransport(MPI_Comm parent, std::chrono::milliseconds timeout) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_set_name(comm_, "teetrain.transport");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  set_timeout(timeout);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && finalized == 0) MPI_Comm_free(&comm_);
}

Request MpiTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  auto st = std::make_unique<MpiRequestState>(Op::Send, data.size());
  check_mpi(
      MPI_Isend(data.data(), to_mpi_count(data.size(), "send"), MPI_BYTE, peer, tag, comm_, st->handle()),
      "MPI_Isend to rank " + std::to_string(peer));
  return Request(std::move(st), Op::Send, peer, tag, data.size());
}

Request MpiTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  auto st = std::make_unique<MpiRequestState>(Op::Recv, buffer.size());
  check_mpi(MPI_Irecv(buffer.data(), to_mpi_count(buffer.size(), "receive"), MPI_BYTE, peer, tag, comm_,
                      st->handle()),
            "MPI_Irecv from rank " + std::to_string(peer));
  return Request(std::move(st), Op::Recv, peer, tag, buffer.size());
}

}  // namespace tt::comm
