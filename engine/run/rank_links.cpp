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
comm::Transport& host_links(comm::MpiTransport& mpi, std::optional<comm::ShmTransport>& shm,
                            comm::WaitMode wait, comm::HostTransport host) {
  mpi.set_wait_policy({.mode = wait});
  agree_host_transport(host, mpi.comm());
  if (host == comm::HostTransport::Mpi) return mpi;
  return shm.emplace(mpi);
}

}  // namespace

std::string RankLinks::host_transport_description() const {
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
    : mpi_(comm, timeout), wire_(host_links(mpi_, shm_, wait, host), adversary, tee_on), tee_on_(tee_on) {}

void RankLinks::secure(const TrustOptions& trust, const std::string& config, const TeeChannelOptions& channel,
                       Profiler* profiler, comm::FailureNotices* notices) {
  if (!tee_on_) return;
  attest_ = make_attest_config(trust, rank(), size(), config);
  session_.emplace(transport(), *attest_, channel, profiler);
  if (notices != nullptr) notices->arm(session_->notice_key().clone());
}

LinkFacts RankLinks::agree_link(bool emulated_links) {
  return agreed_link(local_link(ranks_on_this_host(), size(), emulated_links, shm_inline_bytes()),
                     mpi_.comm());
}

}  // namespace tt
