#include "engine/run/rank_links.h"

#include <array>

#include "base/error.h"
#include "engine/run/host_layout.h"
#include "engine/run_choices.h"

namespace tt {

namespace {

// Ranks that disagree would not even meet in ShmTransport's collective set-up: refuse on every rank.
void agree_host_transport(comm::HostTransport host, MPI_Comm comm) {
  // One collective: the smallest of the values and of their negations gives the least and the most.
  const int mine = static_cast<int>(host);
  std::array<int, 2> in{mine, -mine}, least{};
  comm::check_mpi(MPI_Allreduce(in.data(), least.data(), 2, MPI_INT, MPI_MIN, comm),
                  "MPI_Allreduce (--host-transport)");
  const int lo = least[0], hi = -least[1];
  if (lo != hi)
    throw InputError("the ranks were launched with different --host-transport values (" +
                     std::string(enum_name(static_cast<comm::HostTransport>(lo))) + " and " +
                     enum_name(static_cast<comm::HostTransport>(hi)) + "); give every rank the same");
}

// The transport every message between ranks takes: MPI with the wait policy set, and on it (the
// default) the shared-memory channels between ranks of one host.
comm::Transport& host_links(std::optional<comm::MpiTransport>& mpi_slot, MPI_Comm comm,
                            std::chrono::milliseconds timeout, std::optional<comm::ShmTransport>& shm,
                            comm::WaitMode wait, comm::HostTransport host) {
  comm::MpiTransport& mpi = mpi_slot.emplace(comm, timeout);
  mpi.set_wait_policy({.mode = wait});
  agree_host_transport(host, mpi.comm());
  if (host == comm::HostTransport::Mpi) return mpi;
  return shm.emplace(mpi);
}

// A virtual rank's transport, given the run's timeout and wait policy.
comm::Transport& seat_links(comm::Transport& seat, std::chrono::milliseconds timeout, comm::WaitMode wait) {
  seat.set_timeout(timeout);
  seat.set_wait_policy({.mode = wait});
  return seat;
}

}  // namespace

std::string RankLinks::host_transport_description() const {
  if (!mpi_)
    return "virtual: " + std::to_string(size()) +
           " rank(s) as threads of their processes (--ranks-per-process), those of one process through an "
           "in-process mailbox, others through MPI";
  if (!shm_) return "mpi (--host-transport mpi: MPI's point-to-point path)";
  if (!shm_->fallback_reason().empty())
    return "mpi (shared memory unavailable: " + shm_->fallback_reason() + ")";
  if (shm_->host_peers() == 0) return "mpi (no other rank on this host)";
  const int elsewhere = size() - 1 - shm_->host_peers();
  return "shm: " + std::to_string(shm_->host_peers()) +
         " peer(s) on this host through shared-memory channels (" +
         std::to_string(shm_->layout().slot_bytes / 1024) + " KiB inline, longer messages' bytes " +
         (shm_->direct_reads() ? "read from the sender's memory" : "through MPI: direct reads refused here") +
         ")" +
         (elsewhere > 0 ? "; " + std::to_string(elsewhere) + " rank(s) on other hosts through MPI" : "");
}

RankLinks::RankLinks(MPI_Comm comm, std::chrono::milliseconds timeout, comm::WaitMode wait,
                     comm::HostTransport host, const std::optional<comm::AdversarySpec>& adversary,
                     bool tee_on)
    : wire_(host_links(mpi_, comm, timeout, shm_, wait, host), adversary, tee_on),
      tee_on_(tee_on),
      rank_(mpi_->rank()),
      size_(mpi_->size()) {}

RankLinks::RankLinks(comm::Transport& seat, std::chrono::milliseconds timeout, comm::WaitMode wait,
                     const std::optional<comm::AdversarySpec>& adversary, bool tee_on)
    : wire_(seat_links(seat, timeout, wait), adversary, tee_on),
      tee_on_(tee_on),
      rank_(seat.rank()),
      size_(seat.size()) {}

void RankLinks::secure(const TrustOptions& trust, const std::string& config, const TeeChannelOptions& channel,
                       Profiler* profiler, comm::FailureNotices* notices) {
  if (!tee_on_) return;
  attest_ = make_attest_config(trust, rank(), size(), config);
  session_.emplace(transport(), *attest_, channel, profiler);
  if (notices != nullptr) notices->arm(session_->notice_key().clone());
}

LinkFacts RankLinks::agree_link(bool emulated_links) {
  // Virtual ranks (emulated runs only) have no shared-memory channels and no MPI communicator of their
  // own: their link is taken as one host's, the same on every rank without an agreement.
  if (!mpi_) return local_link(size(), size(), emulated_links, 0);
  return agreed_link(local_link(ranks_on_this_host(), size(), emulated_links, shm_inline_bytes()),
                     mpi_->comm());
}

}  // namespace tt
