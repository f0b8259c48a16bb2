// The links a command's ranks talk through, set up the one way `train` and `bench allreduce` share:
// the MPI transport (its timeout and wait policy), shared-memory channels between the ranks of a host
// (comm/transport/shm_transport.h) unless --host-transport mpi, the teaching adversary on it
// (adversary_wire.h), and in TEE mode the attested handshake and the one sealed channel that carries every
// message between ranks from then on (tee_session.h).
#pragma once
#include <mpi.h>

#include <chrono>
#include <optional>
#include <string>

#include "comm/adversary/adversary_spec.h"
#include "comm/channel.h"
#include "comm/secure/first_failure.h"
#include "comm/secure/secure_session.h"
#include "comm/transport/mpi_transport.h"
#include "comm/transport/shm_transport.h"
#include "core/profiler.h"
#include "engine/gradients/segments.h"
#include "engine/keys/tee_session.h"
#include "engine/run/adversary_wire.h"

namespace tt {

class RankLinks {
 public:
  // Collective over `comm`. The wait policy is set before the adversary's decorator copies it.
  // Throws InputError for an adversary spec that does not fit the world, and on every rank when the
  // ranks were given different `host` transports.
  RankLinks(MPI_Comm comm, std::chrono::milliseconds timeout, comm::WaitMode wait, comm::HostTransport host,
            const std::optional<comm::AdversarySpec>& adversary, bool tee_on);
  // One virtual rank's links (Note [Virtual ranks], comm/transport/virtual_ranks.h): `seat` is its
  // transport, given this timeout and wait policy; no MPI communicator of its own, no shared memory.
  RankLinks(comm::Transport& seat, std::chrono::milliseconds timeout, comm::WaitMode wait,
            const std::optional<comm::AdversarySpec>& adversary, bool tee_on);
  RankLinks(const RankLinks&) = delete;
  RankLinks& operator=(const RankLinks&) = delete;

  // TEE mode (a no-op otherwise), collective: checks `trust` and attests the ring neighbours for the
  // configuration every rank must run (`config`: its canonical JSON), agrees keys and builds the sealed
  // channel. Throws InputError for unusable trust options, IntegrityError when a peer fails.
  // Arms `notices` (may be null) with the session's notice key at once (Note [Sealed notices]).
  void secure(const TrustOptions& trust, const std::string& config, const TeeChannelOptions& channel,
              Profiler* profiler, comm::FailureNotices* notices);

  int rank() const { return rank_; }
  int size() const { return size_; }
  comm::MpiTransport* mpi() { return mpi_ ? &*mpi_ : nullptr; }  // null for a virtual rank
  comm::Transport& transport() { return wire_.transport(); }     // shm or MPI, or the adversary on it
  comm::ShmTransport* shm() { return shm_ ? &*shm_ : nullptr; }  // null with --host-transport mpi
  // How this rank reaches the others of its host, for banners: "shm: 1 peer(s) on this host through
  // shared-memory channels (...)", "mpi (--host-transport mpi)", or why shared memory was not used.
  std::string host_transport_description() const;
  // The longest message the ranks of this host exchange without a handshake through shared memory (0:
  // they talk through MPI): engine/gradients/segments.h's local_link.
  std::size_t shm_inline_bytes() const {
    return shm_ && shm_->host_peers() > 0 ? shm_->layout().slot_bytes : 0;
  }
  // The link between the ranks as they agree on it (engine/gradients/segments.h: agreed_link), which
  // cuts every path's segments and prices auto's messages. Collective: every rank calls it once.
  LinkFacts agree_link(bool emulated_links);
  AdversaryWire& wire() { return wire_; }
  // Every inter-rank message's channel: the sealed one once secure() ran in TEE mode, else plaintext.
  comm::Channel& channel() { return session_ ? static_cast<comm::Channel&>(session_->channel()) : plain_; }
  comm::SealedChannel* sealed() { return session_ ? &session_->channel() : nullptr; }
  const std::optional<comm::AttestConfig>& attest() const { return attest_; }
  TeeSession* session() { return session_ ? &*session_ : nullptr; }
  const TeeSession* session() const { return session_ ? &*session_ : nullptr; }

 private:
  std::optional<comm::MpiTransport> mpi_;  // this process's, unless it hosts virtual ranks
  std::optional<comm::ShmTransport> shm_;  // before wire_, which is built on it
  AdversaryWire wire_;
  bool tee_on_;
  int rank_ = 0;
  int size_ = 1;
  std::optional<comm::AttestConfig> attest_;
  std::optional<TeeSession> session_;
  comm::PlainChannel plain_;
};

}  // namespace tt
