// MPI transport and the MPI session that main() holds.
//
// THREADING CONTRACT (read this before calling comm/ from two threads)
// - MpiSession asks for MPI_THREAD_MULTIPLE and records what the library provided.
// - One MpiTransport is used by one thread at a time. The DDP reducer runs the ring all-reduce on its
//   communication thread while the main thread computes; the main thread may use the same transport
//   (broadcast, barrier, allgather) at other times, but never while the communication thread is inside
//   a call. The hand-over between the two threads must be a synchronisation (mutex/condition variable
//   or a joined thread), which is what makes MPI_THREAD_SERIALIZED sufficient.
// - Any other MPI traffic in the process (e.g. MPI_Allreduce on MPI_COMM_WORLD by the main thread while
//   the communication thread is in the ring) is only allowed when provided == MPI_THREAD_MULTIPLE;
//   MpiSession::multiple() tells. Our traffic never mixes with it: MpiTransport duplicates its
//   communicator.
// - Requests are polled with MPI_Test from the thread that waits; MPI progress happens only inside those
//   calls (Open MPI's ob1 has no progress thread), so do not leave requests unwaited for long.
// - Note [Sizes before receives] (comm/transport.h): a receive is not handed to MPI when it is posted.
//   Every poll of this transport's requests matches the messages that have arrived to its pending
//   receives with a matched probe (comm/mpi_calls.h), oldest receive first for each (peer, tag), and
//   posts MPI_Imrecv only for a message that fits; a longer one is refused unread (FramingError). So a
//   rendezvous message moves on while its receiver waits on anything of this transport, as with a
//   receive posted up front.
#pragma once
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "comm/mpi_calls.h"
#include "comm/transport.h"

namespace tt::comm {

// RAII MPI_Init_thread / MPI_Finalize. Construct first in main(); destroy last (after every
// MpiTransport). If MPI is already initialised, it neither initialises nor finalises.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, int required = MPI_THREAD_MULTIPLE);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int provided() const { return provided_; }
  bool multiple() const { return provided_ >= MPI_THREAD_MULTIPLE; }
  // A communication thread plus a main thread that take turns (see the contract above).
  bool supports_comm_thread() const { return provided_ >= MPI_THREAD_SERIALIZED; }
  int world_rank() const;
  int world_size() const;

 private:
  bool owns_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

const char* thread_level_name(int level);  // "MPI_THREAD_MULTIPLE", ...

class MpiTransport final : public Transport {
 public:
  // Collective over `parent`: duplicates it so our messages never match anybody else's, and sets
  // MPI_ERRORS_RETURN on the duplicate so failures become exceptions instead of aborts.
  explicit MpiTransport(MPI_Comm parent = MPI_COMM_WORLD,
                        std::chrono::milliseconds timeout = kDefaultTimeout);
  ~MpiTransport() override;  // MPI_Comm_free (before MPI_Finalize)

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  Request isend(int peer, std::span<const std::byte> data, int tag) override;
  // Receives name their peer and tag: MPI_ANY_SOURCE or MPI_ANY_TAG is refused (RunError), since a
  // message is matched to its receive by a probe for exactly that pair (Note [Sizes before receives]).
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override;

  // Posts a send on this transport's communicator whose polls match `waiting`'s arrived receives rather
  // than this one's: for a thread that sends into another rank's communicator but receives on its own
  // (Note [Virtual ranks], comm/transport/virtual_ranks.h). Touches nothing of this transport but its
  // communicator, so it may run beside the thread that owns this transport (MPI_THREAD_MULTIPLE).
  Request isend_from(MpiTransport& waiting, int peer, std::span<const std::byte> data, int tag);

  // Note [Sizes before receives]: matches every pending receive whose message has arrived (posting
  // order per peer and tag). Each poll of a request does it; ShmTransport calls it while a long
  // message's bytes travel through this transport.
  void match_arrived();

  // The duplicated communicator, e.g. for the MPI_Allreduce baseline.
  MPI_Comm comm() const { return comm_; }

  struct Receive;  // a posted receive (mpi_transport.cpp); none may outlive the transport

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Receive*> unmatched_;           // posted receives without their message yet, in posting order
  std::vector<std::pair<int, int>> waiting_;  // match_arrived's scratch, kept to keep polls allocation-free
};

}  // namespace tt::comm
