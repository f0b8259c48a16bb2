// The emulated cluster's topology (--gpus-per-node, --intra-node-link, --inter-node-link): ranks in
// nodes of G consecutive ranks, one link class inside a node and one between nodes, each a row of the
// link table below (docs/reproducing.md's table of sources cites every figure). Without
// --gpus-per-node every rank is on one node and every link is the GPU's NVLink, as before topologies.
//
// A message between two ranks is booked at its pair's class: latency + bytes / rate
// (platform/emulated/emulated_link_transport.h), and the cost model prices each hop at the slowest class
// any rank's hop of that step crosses (comm/allreduce/allreduce_cost.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "core/enum_names.h"

namespace tt {

enum class LinkClass : std::uint8_t { Nvlink, Pcie, InfinibandNdr, Roce };
template <>
struct EnumNames<LinkClass> {
  static constexpr std::pair<const char*, LinkClass> all[] = {{"nvlink", LinkClass::Nvlink},
                                                              {"pcie", LinkClass::Pcie},
                                                              {"ib", LinkClass::InfinibandNdr},
                                                              {"roce", LinkClass::Roce}};
};

// One row of the link table: per direction, per GPU.
struct LinkClassSpec {
  LinkClass link = LinkClass::Nvlink;
  const char* title = "";   // "NVLink 4", for banners
  double gbps = 0;          // GB/s (1e9 B/s) per direction; 0: the GPU's own NVLink (GpuSpec::nvlink_gbps)
  double latency_us = 0;    // per message, us
  bool inside_node = true;  // a node's link (else between nodes)
  const char* source = "";  // short citation; the URLs are in docs/reproducing.md
};
const LinkClassSpec& link_class_spec(LinkClass c);

struct Topology {
  int gpus_per_node = 0;  // 0: every rank on one node, each link the GPU's NVLink without latency
  LinkClass intra = LinkClass::Nvlink;
  LinkClass inter = LinkClass::InfinibandNdr;
  int world = 0;  // the run's (modelled) ranks, where known (RunPlan): whether there is more than one node

  bool given() const { return gpus_per_node > 0; }
  // Every rank on one node: no --gpus-per-node, or one node of them all (G = P). A group message (the
  // ring's forwarded all-gather) never leaves it (message_route, emulated_gpu.h).
  bool one_node() const { return !given() || (world > 0 && gpus_per_node >= world); }
  int node_of(int rank) const { return given() ? rank / gpus_per_node : 0; }
  // The class of the link between ranks a and b.
  LinkClass between(int a, int b) const { return node_of(a) == node_of(b) ? intra : inter; }
  // "2 nodes x 8 GPUs, NVLink 4 inside, InfiniBand NDR between" for P ranks ("" when not given).
  std::string describe(int ranks) const;
};
// Throws InputError naming the problem: G < 0, G not dividing P, a node class between nodes or the
// reverse.
void validate_topology(const Topology& t, int ranks);

}  // namespace tt
