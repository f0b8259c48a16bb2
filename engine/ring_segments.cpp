#include "engine/ring_segments.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "base/error.h"
#include "comm/mpi_tool_vars.h"
#include "comm/sealed_channel.h"

namespace tt {
namespace {

constexpr std::size_t kLine = 64;  // segments stay whole cache lines (and whole floats)

std::string kib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes % 1024 == 0 ? "%.0f KiB" : "%.2f KiB",
                static_cast<double>(bytes) / 1024);
  return buf;
}

}  // namespace

RingTransport ring_transport(int ranks_on_host, int world, bool emulated_links) {
  RingTransport t;
  if (emulated_links) {
    t.name = "emulated";
    return t;
  }
  t.across_hosts = ranks_on_host < world;
  if (!t.across_hosts) {
    t.name = "shared memory";
    return t;
  }
  t.name = "TCP";
  // Another point-to-point layer (UCX, say) has its own protocols: its TCP limit says nothing.
  const std::optional<std::string> pml = comm::mpi_control_string("pml");
  if (pml && !pml->empty() && *pml != "ob1") return t;
  t.eager_limit = comm::mpi_control_uint("btl_tcp_eager_limit").value_or(0);
  return t;
}

SegmentPick pick_segment(int segment_kb, const RingTransport& t) {
  if (segment_kb < 0) throw InputError("--segment-kb must be 0 (automatic) or a size in KiB");
  if (segment_kb > 0) {
    const std::size_t bytes = static_cast<std::size_t>(segment_kb) * 1024;
    return {bytes, kib(bytes) + " (--segment-kb)"};
  }
  // Note [Ring segments under the eager limit].
  constexpr std::size_t overhead = comm::SealedChannel::kOverhead;
  if (t.across_hosts && t.eager_limit > kMpiHeaderBytes + overhead + kLine) {
    const std::size_t fit = (t.eager_limit - kMpiHeaderBytes - overhead) / kLine * kLine;
    if (fit < kDefaultSegmentBytes)
      return {fit, kib(fit) + " (automatic: under MPI's " + t.name + " eager limit, " +
                       std::to_string(t.eager_limit) + " bytes, between hosts)"};
  }
  return {kDefaultSegmentBytes, kib(kDefaultSegmentBytes) + " (automatic, " + t.name + ")"};
}

SegmentPick agreed_segment(int segment_kb, const RingTransport& t, MPI_Comm comm) {
  SegmentPick mine = pick_segment(segment_kb, t);
  std::uint64_t local = mine.bytes, least = mine.bytes;
  if (MPI_Allreduce(&local, &least, 1, MPI_UINT64_T, MPI_MIN, comm) != MPI_SUCCESS)
    throw RunError("agreeing on the ring's segment size: MPI_Allreduce failed");
  if (least != local) {
    mine.bytes = static_cast<std::size_t>(least);
    mine.why = kib(mine.bytes) + " (automatic: the smallest any rank's transport allows)";
  }
  return mine;
}

}  // namespace tt
