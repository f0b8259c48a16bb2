// The transport a command's ranks talk through: the MPI transport itself, or — with `--adversary` —
// the on-path adversary's decorator on it (comm/adversary/adversary_transport.h). `train` and `bench
// allreduce` both build theirs here, so an attack means the same thing in both.
#pragma once
#include <optional>
#include <string>

#include "comm/adversary/adversary_transport.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/transport.h"

namespace tt {

class AdversaryWire {
 public:
  // `sealed`: the messages above will be sealed (TEE on); the adversary knows the public wire format.
  // Throws InputError for a spec that does not fit the world or an unusable snoop directory.
  AdversaryWire(comm::Transport& inner, const std::optional<comm::AdversarySpec>& spec, bool sealed);

  comm::Transport& transport() { return adversary_ ? static_cast<comm::Transport&>(*adversary_) : inner_; }
  bool active() const { return adversary_.has_value(); }
  // Where the run's all-reduce sends the attacked rank's gradient messages, which the banner and the
  // report name: `algo` for every bucket, or none (auto: any of ours); node_ranks: hier's nodes (0:
  // one node); split: --shard's halves. Before it is called they name the ring successor.
  void route_through(const std::optional<comm::ReduceAlgo>& algo, int node_ranks, bool split);
  // The banner line ("adversary ON: ..."), or "" without one.
  std::string banner() const;
  // Collective: rank 0 gets the adversary's view at the end of a finished run, the others "".
  std::string report();

 private:
  comm::Transport& inner_;
  std::optional<comm::AdversaryTransport> adversary_;
};

}  // namespace tt
