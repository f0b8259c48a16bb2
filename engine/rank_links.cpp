#include "engine/rank_links.h"

namespace tt {

namespace {
comm::MpiTransport& with_wait(comm::MpiTransport& t, comm::WaitMode wait) {
  t.set_wait_policy({.mode = wait});
  return t;
}
}  // namespace

RankLinks::RankLinks(MPI_Comm comm, std::chrono::milliseconds timeout, comm::WaitMode wait,
                     const std::optional<comm::AdversarySpec>& adversary, bool tee_on)
    : mpi_(comm, timeout), wire_(with_wait(mpi_, wait), adversary, tee_on), tee_on_(tee_on) {}

void RankLinks::secure(const TrustOptions& trust, const std::string& config, const TeeChannelOptions& channel,
                       Profiler* profiler) {
  if (!tee_on_) return;
  attest_ = make_attest_config(trust, rank(), size(), config);
  session_.emplace(transport(), *attest_, channel, profiler);
}

}  // namespace tt
