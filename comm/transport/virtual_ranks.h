// VirtualRanks: several ranks of one run hosted as threads of one process (`train --ranks-per-process
// K`), each with a Transport of its own, so that an emulated run's P ranks need not be P processes.
//
// Note [Virtual ranks]: process p of an MPI job of N processes hosts ranks p*K .. p*K+K-1 of a world of
// N*K ranks. A rank's transport keeps every semantic of comm/transport.h, so the handshake, the agreement
// and the sealed tokens run between virtual ranks exactly as between processes:
// - ranks of one process exchange messages through the in-process mailbox (local_mailbox.h): one inbox
//   per receiving rank, one queue per (sender, tag) in it; a send copies its bytes and completes at once
//   (as a buffered MPI send), receives are matched in posting order, a message longer than its receive
//   is refused unread (FramingError, Note [Sizes before receives]);
// - ranks of other processes are reached through MPI: each local rank owns one MpiTransport (a duplicated
//   communicator) on which it alone receives; a rank sends into its receiver's communicator with the tag
//   tag*K + the sender's local index, so MPI's matching by (process, tag) names the virtual sender. A
//   thread that waits on such a send matches its own transport's arrived receives meanwhile, as
//   MpiTransport's own sends do (a peer's rendezvous send may be waiting on us).
// Nothing else is process-wide: each virtual rank has its own transport, timeout and wait policy.
// Remote traffic needs MPI_THREAD_MULTIPLE (several ranks' threads call MPI at once); the constructor
// refuses a job of several processes without it.
#pragma once
#include <mpi.h>

#include <chrono>
#include <memory>
#include <vector>

#include "comm/transport.h"
#include "comm/transport/local_mailbox.h"
#include "comm/transport/mpi_transport.h"

namespace tt::comm {

class VirtualRanks {
 public:
  // Collective over `parent` (the MPI_Comm_dups), on one thread, before the ranks' threads start.
  // `multiple`: MPI gave MPI_THREAD_MULTIPLE. Throws InputError for per_process < 1, or for several
  // processes without MPI_THREAD_MULTIPLE or with more local ranks than MPI's tags can name.
  VirtualRanks(MPI_Comm parent, int per_process, bool multiple);
  ~VirtualRanks();
  VirtualRanks(const VirtualRanks&) = delete;
  VirtualRanks& operator=(const VirtualRanks&) = delete;

  int per_process() const { return per_process_; }
  int processes() const { return processes_; }
  int world() const { return processes_ * per_process_; }
  // The transport of this process's `local`-th rank (rank first() + local of world()).
  Transport& transport(int local) { return *ranks_.at(static_cast<std::size_t>(local)); }
  int first() const { return process_ * per_process_; }

 private:
  int per_process_ = 1;
  int process_ = 0;
  int processes_ = 1;
  std::unique_ptr<LocalMailbox> mailbox_;              // this process's ranks' inboxes
  std::vector<std::unique_ptr<MpiTransport>> remote_;  // (per_process,) with several processes
  std::vector<std::unique_ptr<Transport>> ranks_;      // (per_process,)
};

}  // namespace tt::comm
