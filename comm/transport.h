// Transport: non-blocking point-to-point byte messages between ranks, and a wait with a deadline.
//
// Everything that crosses between ranks (ring all-reduce, broadcast, barrier, allgather) goes through
// this interface, so the collectives never name MPI and can run over the in-process transport in tests.
//
// Semantics every implementation keeps (the ring relies on them):
// - Messages from one sender to one receiver with the same tag are matched in the order they were sent,
//   and receives are matched in the order they were posted (MPI's non-overtaking rule).
// - A buffer handed to isend / irecv must stay alive and untouched until the request completes.
// - A receive completes with the number of bytes that actually arrived; a message longer than the
//   posted buffer is refused unread (FramingError, Note [Sizes before receives]), a shorter one
//   completes normally and the caller checks the count (wait() returns it) — the ring treats any
//   short message as fatal.
// - wait() never hangs: it throws tt::RunError naming this rank, the peer, the operation and the
//   timeout when the request does not complete in time.
//
// Note [Sizes before receives]: no message is received before its size is known to fit. A peer, or
// anything on the host that can reach the ranks' links, may send more than a receive posted for, and
// a library handed that as a truncation may fail badly (Open MPI 4.1 writes past the buffer: a
// segfault over shared memory, heap corruption over TCP). So every transport learns a message's size
// first — MpiTransport by a matched probe (MPI_Improbe, comm/mpi_calls.h) before MPI_Imrecv,
// ShmTransport from the header its channel checks — and refuses a longer message without receiving
// any of it: the receive fails with a FramingError naming this rank, the peer, the tag and both
// sizes (describe_oversize), and the next receive on that peer and tag gets the next message. The
// send of a refused message may never complete (MPI's stays pending: nothing receives it), so only a
// run that is failing refuses one. Whoever waits turns the FramingError into its verdict: an
// integrity failure (exit 3) where the bytes are sealed (throw_wait_failure) or are attestation (the
// handshake, comm/secure/secure_session.cpp), a run failure (exit 1) elsewhere. The failure notices
// (comm/secure/first_failure.cpp) probe the same way before they receive. NcclTransport cannot: NCCL
// has no probe, and a send and receive of different counts are undefined there. Its messages run on
// communicators that only the job's own ranks hold (ncclCommInitRank with the unique id the ranks
// exchanged), so nothing else on the host can inject into them; its sizes come from the ring's own
// plan on both sides.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace tt::comm {

class SharedBuffer;  // comm/transport/shared_buffer.h

// Tags keep the traffic of different collectives apart (each transport owns its own communicator,
// so these never collide with anybody else's messages). All below MPI's guaranteed TAG_UB of 32767.
namespace tags {
inline constexpr int kRing = 100;
inline constexpr int kBroadcast = 101;
inline constexpr int kBarrier = 102;
inline constexpr int kAllgather = 103;
// 110 .. 119: attestation and key agreement (comm/secure/secure_session.h)
inline constexpr int kAttestFirst = 110;
inline constexpr int kAttestLast = 119;
inline constexpr int kAdversaryReport = 120;  // --adversary: gathering its view on rank 0 (not attacked)
inline constexpr int kUser = 1000;            // first tag free for tests and ad-hoc exchanges
}  // namespace tags

enum class Op { Send, Recv };
const char* op_name(Op op);

// Implementation side of a pending operation (an MPI_Request, an in-process mailbox slot...).
// The destructor of a still-pending state must release it without blocking for long (cancel a
// receive, detach a send): it runs when an error unwinds the stack.
class RequestState {
 public:
  virtual ~RequestState() = default;
  // Checks once, without blocking, whether the operation finished; returns the bytes transferred
  // when it did. May throw RunError (e.g. a message longer than the receive buffer).
  virtual std::optional<std::size_t> poll() = 0;
};

// A handle to one posted send or receive. Move-only; destroying a pending request cancels/detaches
// it. After completion it keeps the byte count.
class Request {
 public:
  Request() = default;
  Request(std::unique_ptr<RequestState> state, Op op, int peer, int tag, std::size_t posted_bytes)
      : state_(std::move(state)), op_(op), peer_(peer), tag_(tag), posted_(posted_bytes) {}
  Request(Request&&) noexcept = default;
  Request& operator=(Request&&) noexcept = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() = default;

  bool pending() const { return state_ != nullptr; }
  bool done() const { return done_; }
  Op op() const { return op_; }
  int peer() const { return peer_; }
  int tag() const { return tag_; }
  std::size_t posted_bytes() const { return posted_; }
  std::size_t bytes() const { return bytes_; }  // valid once done()

 private:
  friend class Transport;
  std::unique_ptr<RequestState> state_;
  Op op_ = Op::Send;
  int peer_ = -1;
  int tag_ = 0;
  std::size_t posted_ = 0;
  std::size_t bytes_ = 0;
  bool done_ = false;
};

// How a waiting thread polls (--comm-wait).
// - Adaptive: it first yields for `spin` (low latency when the peer is about to answer), then sleeps
//   with growing naps up to `max_sleep`, so a waiting communication thread does not steal a core from
//   compute threads, and oversubscribed ranks (more ranks than cores) do not starve the very peer they
//   wait for. The default for training, where the comm thread shares cores with backward.
// - Busy: polls without pause, as MPI's own progress loop does inside MPI_Allreduce: the lowest latency
//   (every poll also moves MPI's rendezvous and copies forward), at the price of a whole core.
//   `bench allreduce` uses it while every rank has a core (engine/run/host_layout.h fair_wait_mode), so
//   the ring and MPI_Allreduce wait the same way.
enum class WaitMode : std::uint8_t { Adaptive, Busy };
// How ranks on one host exchange messages (--host-transport): through ShmTransport's shared-memory
// channels (comm/transport/shm_transport.h), or MPI's own point-to-point path (MpiTransport) as a baseline.
enum class HostTransport : std::uint8_t { Shm, Mpi };

struct WaitPolicy {
  WaitMode mode = WaitMode::Adaptive;
  std::chrono::microseconds spin{200};
  std::chrono::microseconds max_sleep{100};
};

class Transport {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{30'000};

  Transport() = default;
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "mpi", "inproc"

  // Posts a send of `data` to `peer`. `data` must stay valid until the request completes.
  virtual Request isend(int peer, std::span<const std::byte> data, int tag) = 0;
  // Posts a receive of at most buffer.size() bytes from `peer`.
  virtual Request irecv(int peer, std::span<std::byte> buffer, int tag) = 0;

  // Note [Shared buffers] (comm/transport/shm_transport.h): a transport that can may let its host peers read
  // sends from `buffer` in place, until unshare(), which must come before the buffer goes (ScopedShare
  // below). Others ignore both.
  virtual void share(const SharedBuffer& /*buffer*/) {}
  virtual void unshare(const SharedBuffer& /*buffer*/) {}
  // Whether `bytes` at `p` lie in a buffer shared with this transport.
  virtual bool shared(const void* /*p*/, std::size_t /*bytes*/) const { return false; }
  // Whether irecv_sum may be posted for messages from `peer`.
  virtual bool sums_on_receive(int /*peer*/) const { return false; }
  // Posts a receive of at most acc.size() floats that are added into `acc` (acc[i] += received[i],
  // one IEEE add per element, as ReduceMemory::add_into) instead of stored; the byte count and the
  // short-message rule are irecv's. Only where sums_on_receive(peer); elsewhere it throws RunError.
  virtual Request irecv_sum(int peer, std::span<float> acc, int tag);

  // Non-blocking completion check; true once done (then r.bytes() is the transferred count).
  bool test(Request& r);
  // Blocks until done; returns the bytes transferred (received bytes for a receive). Throws RunError
  // if the request does not complete within `timeout` (default: this transport's timeout()).
  std::size_t wait(Request& r);
  std::size_t wait(Request& r, std::chrono::milliseconds timeout);
  // Waits for every pending request in the range (in order), each with the default timeout.
  template <typename Range>
  void wait_all(Range& requests) {
    for (auto& r : requests) wait(r);
  }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  const WaitPolicy& wait_policy() const { return policy_; }
  void set_wait_policy(const WaitPolicy& p) { policy_ = p; }

 private:
  std::chrono::milliseconds timeout_ = kDefaultTimeout;
  WaitPolicy policy_{};
};

// Shares a buffer with a transport for the guard's lifetime (Transport::share). Both must outlive it.
class ScopedShare {
 public:
  ScopedShare() = default;
  ScopedShare(Transport& t, const SharedBuffer& b) : t_(&t), b_(&b) { t.share(b); }
  ScopedShare(const ScopedShare&) = delete;
  ScopedShare& operator=(const ScopedShare&) = delete;
  ~ScopedShare() {
    if (t_ != nullptr) t_->unshare(*b_);
  }

 private:
  Transport* t_ = nullptr;
  const SharedBuffer* b_ = nullptr;
};

// "rank 1: receive from rank 2 (tag 100, 4096 bytes) did not complete within 30 s" — shared wording so
// every transport reports a stuck peer the same way.
std::string describe_timeout(int rank, const Request& r, std::chrono::milliseconds timeout);

// Note [Sizes before receives]: "rank 1: a message of 67108864 bytes from rank 0 (tag 111) is longer
// than the receive buffer of 731 bytes; refused unread" — every transport's FramingError for it.
std::string describe_oversize(int rank, int peer, int tag, std::size_t bytes, std::size_t posted);

// What a failed wait becomes, as one line `what` (the caller's context, then the transport's error):
// on a sealed path (`sealed`) a FramingError is a sealed message out of its place — reordered,
// replayed, forged or oversized — so an IntegrityError (exit 3); elsewhere it stays a FramingError,
// and anything else a RunError (exit 1 both).
[[noreturn]] void throw_wait_failure(const std::exception& e, const std::string& what, bool sealed);

}  // namespace tt::comm
