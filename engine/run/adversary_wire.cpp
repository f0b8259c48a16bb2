#include "engine/run/adversary_wire.h"

#include <algorithm>

#include "comm/allreduce/allreduce_cost.h"
#include "comm/secure/sealed_channel.h"

namespace tt {

AdversaryWire::AdversaryWire(comm::Transport& inner, const std::optional<comm::AdversarySpec>& spec,
                             bool sealed)
    : inner_(inner) {
  if (!spec) return;
  comm::WireFormat wire;
  wire.sealed = sealed;
  wire.clear_trailer = sealed ? comm::SealedChannel::kHeaderSize : 0;
  wire.tag_bytes = sealed ? comm::SealedChannel::kOverhead - comm::SealedChannel::kHeaderSize : 0;
  adversary_.emplace(inner, *spec, wire);
}

void AdversaryWire::route_through(const std::optional<comm::ReduceAlgo>& algo, int node_ranks, bool split) {
  if (!adversary_) return;
  comm::GradientRoute route{
      .peers = {},
      .algorithm = algo ? "the " + std::string(comm::reduce_algo_title(*algo)) + " all-reduce"
                        : std::string("auto, whichever algorithm the cost model picks,")};
  for (const comm::ReduceAlgo a : comm::kReduceAlgos) {
    if (algo && a != *algo) continue;
    for (const int p : comm::send_peers(a, adversary_->spec().link, adversary_->size(), node_ranks, split))
      if (std::find(route.peers.begin(), route.peers.end(), p) == route.peers.end()) route.peers.push_back(p);
  }
  adversary_->set_route(std::move(route));
}

std::string AdversaryWire::banner() const {
  if (!adversary_) return "";
  return "adversary ON (teaching: an attacker on the links between ranks): " +
         comm::describe(adversary_->spec(), adversary_->size(), adversary_->route());
}

std::string AdversaryWire::report() {
  return adversary_ ? adversary_->report() : "";
}

}  // namespace tt
