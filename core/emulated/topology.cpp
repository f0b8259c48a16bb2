#include "core/emulated/topology.h"

#include <array>

#include "base/error.h"

namespace tt {

namespace {

// Note [Link classes]: the figures and their sources (docs/reproducing.md, "Topology"). Rates are per
// direction per GPU; latencies are NCCL's own per-hop model for its ring's Simple protocol
// (src/graph/tuning.cc, hwLat: NVLink 3.4, PCI 5.7, NET 14.0 us), the one published set that prices
// every class alike. RoCE carries the same 400 Gb/s as NDR; NCCL does not tell them apart, and its
// extra latency here is the switch hops' difference (Spectrum-4 ~500 ns vs Quantum-2 ~130 ns per hop,
// three hops of a two-tier fabric): a modelled assumption, labelled as one.
constexpr std::array<LinkClassSpec, 4> kLinks = {{
    {.link = LinkClass::Nvlink,
     .title = "NVLink",
     .gbps = 0,
     .latency_us = 3.4,
     .inside_node = true,
     .source = "GPU table (H100 NVLink 4: 900 GB/s both ways); NCCL hwLat"},
    {.link = LinkClass::Pcie,
     .title = "PCIe Gen5 x16",
     .gbps = 43.5,
     .latency_us = 5.7,
     .inside_node = true,
     .source = "ISPASS 2025 measured pinned H2D, CC off (64 GB/s theoretical); NCCL hwLat"},
    {.link = LinkClass::InfinibandNdr,
     .title = "InfiniBand NDR",
     .gbps = 50.0,
     .latency_us = 14.0,
     .inside_node = false,
     .source = "ConnectX-7 NDR 400 Gb/s per GPU; NCCL hwLat (NET)"},
    {.link = LinkClass::Roce,
     .title = "RoCE 400GbE",
     .gbps = 50.0,
     .latency_us = 15.1,
     .inside_node = false,
     .source = "ConnectX-7 400GbE; NCCL hwLat (NET) + 1.1 us switch hops (assumed)"},
}};

}  // namespace

const LinkClassSpec& link_class_spec(LinkClass c) {
  return kLinks.at(static_cast<std::size_t>(c));
}

std::string Topology::describe(int ranks) const {
  if (!given()) return "";
  return std::to_string(ranks / gpus_per_node) + " node" + (ranks / gpus_per_node == 1 ? "" : "s") + " x " +
         std::to_string(gpus_per_node) + " GPUs, " + link_class_spec(intra).title + " inside, " +
         link_class_spec(inter).title + " between";
}

void validate_topology(const Topology& t, int ranks) {
  if (t.gpus_per_node < 0) throw InputError("--gpus-per-node must be >= 1 (or 0: one node of every rank)");
  if (!t.given()) return;
  if (ranks % t.gpus_per_node != 0) {
    throw InputError("--gpus-per-node " + std::to_string(t.gpus_per_node) + " does not divide the " +
                     std::to_string(ranks) + " ranks into whole nodes; pick a divisor of the rank count");
  }
  if (!link_class_spec(t.intra).inside_node)
    throw InputError(std::string("--intra-node-link ") + enum_name(t.intra) +
                     " links nodes, not GPUs of one node: use nvlink or pcie");
  if (link_class_spec(t.inter).inside_node)
    throw InputError(std::string("--inter-node-link ") + enum_name(t.inter) +
                     " links GPUs of one node, not nodes: use ib or roce");
}

}  // namespace tt
