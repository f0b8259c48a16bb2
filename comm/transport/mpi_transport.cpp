#include "comm/transport/mpi_transport.h"

#include <algorithm>
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

// A request that is being abandoned (an error is unwinding) gets `patience` to finish before it is
// freed, so that MPI is not left writing into, or reading from, memory the unwinding is about to free.
void abandon(MPI_Request& req, std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (req != MPI_REQUEST_NULL && std::chrono::steady_clock::now() < deadline) {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag == 0) std::this_thread::yield();
  }
  if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
}

class MpiSendState final : public RequestState {
 public:
  MpiSendState(MpiTransport& t, std::size_t posted) : t_(t), posted_(posted) {}
  MpiSendState(const MpiSendState&) = delete;
  MpiSendState& operator=(const MpiSendState&) = delete;

  // A send is given a bounded time to finish before it is detached: its buffer (a sealed message the
  // ring owns) is freed by the unwinding, and a detached rendezvous send would carry whatever then
  // sits in that memory, so the peer would report a second, spurious "tampered" message.
  ~MpiSendState() override { abandon(req_, std::chrono::milliseconds(200)); }

  std::optional<std::size_t> poll() override {
    t_.match_arrived();  // a peer's rendezvous send may be waiting for our receive, as ours for its
    int flag = 0;
    check_mpi(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), "MPI_Test (send)");
    if (flag == 0) return std::nullopt;
    return posted_;
  }

  MPI_Request* handle() { return &req_; }

 private:
  MpiTransport& t_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  std::size_t posted_;
};

}  // namespace

// Note [Sizes before receives] (comm/transport.h): a receive waits in the transport's list until its
// message has arrived; only then, its size known, is it posted to MPI, or refused.
struct MpiTransport::Receive final : RequestState {
  Receive(MpiTransport& transport, int p, int g, std::span<std::byte> b)
      : t(transport), peer(p), tag(g), buffer(b) {}
  Receive(const Receive&) = delete;
  Receive& operator=(const Receive&) = delete;

  // Abandoned before its message came: nothing of it is in MPI's hands. A matched one cannot be
  // cancelled any more (MPI writes the message it matched): it gets a bounded time to arrive.
  ~Receive() override {
    if (!matched) std::erase(t.unmatched_, this);
    abandon(req, std::chrono::milliseconds(50));
  }

  std::optional<std::size_t> poll() override {
    t.match_arrived();
    if (!matched) return std::nullopt;
    if (!error.empty()) {
      if (refused) throw FramingError(error);
      throw RunError(error);
    }
    int flag = 0;
    check_mpi(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test (receive)");
    return flag != 0 ? std::optional(bytes) : std::nullopt;
  }

  // Takes this receive's message if it has arrived: into `buffer` when it fits, else refused unread.
  // False while none has arrived. Once matched it throws nothing (the poll reports), so that the
  // transport's list never keeps a receive that has its message.
  bool match() {
    std::optional<ProbedMessage> m = probe_message(t.comm_, peer, tag);
    if (!m) return false;
    matched = true;
    bytes = m->bytes;
    refused = bytes > buffer.size();
    if (refused) {
      error = describe_oversize(t.rank_, peer, tag, bytes, buffer.size());
      return true;
    }
    const int rc = MPI_Imrecv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, &m->handle, &req);
    try {
      check_mpi(rc, "MPI_Imrecv from rank " + std::to_string(peer));
    } catch (const RunError& e) {
      error = e.what();
    }
    return true;
  }

  MpiTransport& t;
  int peer;
  int tag;
  std::span<std::byte> buffer;
  MPI_Request req = MPI_REQUEST_NULL;
  bool matched = false;
  std::size_t bytes = 0;  // the matched message's
  bool refused = false;   // longer than `buffer`: never received
  std::string error;      // what every poll throws once matched: a FramingError when refused
};

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
  return isend_from(*this, peer, data, tag);
}

Request MpiTransport::isend_from(MpiTransport& waiting, int peer, std::span<const std::byte> data, int tag) {
  auto st = std::make_unique<MpiSendState>(waiting, data.size());
  check_mpi(
      MPI_Isend(data.data(), to_mpi_count(data.size(), "send"), MPI_BYTE, peer, tag, comm_, st->handle()),
      "MPI_Isend to rank " + std::to_string(peer));
  return Request(std::move(st), Op::Send, peer, tag, data.size());
}

Request MpiTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  if (peer < 0 || peer >= size_ || tag < 0) {
    throw RunError("mpi transport: rank " + std::to_string(rank_) + " posted a receive from rank " +
                   std::to_string(peer) + " with tag " + std::to_string(tag) +
                   "; a receive names one of ranks 0 .. " + std::to_string(size_ - 1) +
                   " and a tag, never a wildcard (Note [Sizes before receives])");
  }
  (void)to_mpi_count(buffer.size(), "receive");
  auto st = std::make_unique<Receive>(*this, peer, tag, buffer);
  unmatched_.push_back(st.get());
  return Request(std::move(st), Op::Recv, peer, tag, buffer.size());
}

// Note [Sizes before receives]: only the oldest pending receive of a (peer, tag) may probe: a younger
// one would take the message the older one is owed (MPI's order of posting).
void MpiTransport::match_arrived() {
  std::vector<std::pair<int, int>>& waiting = waiting_;  // (peer, tag) whose oldest has no message yet
  waiting.clear();
  for (std::size_t i = 0; i < unmatched_.size();) {
    Receive* r = unmatched_[i];
    const std::pair key{r->peer, r->tag};
    if (std::find(waiting.begin(), waiting.end(), key) == waiting.end()) {
      if (r->match()) {
        unmatched_.erase(unmatched_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      waiting.push_back(key);
    }
    ++i;
  }
}

}  // namespace tt::comm
