#include "engine/gradients/segments.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>

#include "base/error.h"
#include "base/host_memory.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport/mpi_tool_vars.h"

namespace tt {
namespace {

std::string kib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes % 1024 == 0 ? "%.0f KiB" : "%.2f KiB",
                static_cast<double>(bytes) / 1024);
  return buf;
}

// Whether Open MPI's pml request leaves ob1 (whose BTLs' eager limits apply) as the layer it picks:
// unset or "ob1"; or an exclusion list ("^ucx", as sites write to rule UCX out) that rules out UCX
// and not ob1 (cm, the remaining one, is picked only over a high-speed MTL, where none of this applies
// anyway: its limits are unknown either way).
bool pml_is_ob1(const std::optional<std::string>& pml) {
  if (!pml || pml->empty() || *pml == "ob1") return true;
  if ((*pml)[0] != '^') return false;
  bool ucx_excluded = false;
  std::size_t start = 1;
  while (start <= pml->size()) {
    const std::size_t end = std::min(pml->find(',', start), pml->size());
    const std::string name = pml->substr(start, end - start);
    if (name == "ob1") return false;
    ucx_excluded = ucx_excluded || name == "ucx";
    start = end + 1;
  }
  return ucx_excluded;
}

}  // namespace

LinkFacts local_link(int ranks_on_host, int world, bool emulated_links, std::size_t shm_inline_bytes) {
  LinkFacts t;
  if (emulated_links) {
    t.name = "emulated";
    return t;
  }
  t.across_hosts = ranks_on_host < world;
  if (!t.across_hosts && shm_inline_bytes > 0) {
    t.name = "shared-memory channels";
    t.eager_limit = shm_inline_bytes + kMpiHeaderBytes;
    return t;
  }
  t.name = t.across_hosts ? "TCP" : "shared memory";
  // Another point-to-point layer (UCX, say) has its own protocols: these limits say nothing of it.
  if (!pml_is_ob1(comm::mpi_control_string("pml"))) return t;
  // Open MPI 4 calls its shared-memory transport vader, Open MPI 5 sm.
  static constexpr std::array<const char*, 1> kTcp{"btl_tcp_eager_limit"};
  static constexpr std::array<const char*, 2> kShared{"btl_vader_eager_limit", "btl_sm_eager_limit"};
  const std::span<const char* const> vars =
      t.across_hosts ? std::span<const char* const>(kTcp) : std::span<const char* const>(kShared);
  for (const char* var : vars) {
    if (const auto limit = comm::mpi_control_uint(var)) {
      t.eager_limit = static_cast<std::size_t>(*limit);
      break;
    }
  }
  return t;
}

LinkFacts agreed_link(const LinkFacts& mine, MPI_Comm comm) {
  // An unknown limit (0) agrees as "none known" only if every rank says so.
  const std::uint64_t unknown = UINT64_MAX;
  std::uint64_t local = mine.eager_limit > 0 ? mine.eager_limit : unknown, least = local;
  if (MPI_Allreduce(&local, &least, 1, MPI_UINT64_T, MPI_MIN, comm) != MPI_SUCCESS)
    throw RunError("agreeing on the ranks' eager limit: MPI_Allreduce failed");
  LinkFacts t = mine;
  t.eager_limit = least == unknown ? 0 : static_cast<std::size_t>(least);
  return t;
}

SegmentPick pick_segment(int segment_kb, const LinkFacts& t) {
  if (segment_kb < 0) throw InputError("--segment-kb must be 0 (automatic) or a size in KiB");
  if (segment_kb > 0) {
    const std::size_t bytes = static_cast<std::size_t>(segment_kb) * 1024;
    return {bytes, kib(bytes) + " (--segment-kb)"};
  }
  // Note [Ring segments under the eager limit]. Segments stay whole cache lines (and whole floats).
  constexpr std::size_t overhead = comm::SealedChannel::kOverhead;
  if (t.across_hosts && t.eager_limit > kMpiHeaderBytes + overhead + kCacheLineBytes) {
    const std::size_t fit = (t.eager_limit - kMpiHeaderBytes - overhead) / kCacheLineBytes * kCacheLineBytes;
    if (fit < kDefaultSegmentBytes)
      return {fit, kib(fit) + " (automatic: under MPI's " + t.name + " eager limit, " +
                       std::to_string(t.eager_limit) + " bytes, between hosts)"};
  }
  return {kDefaultSegmentBytes, kib(kDefaultSegmentBytes) + " (automatic, " + t.name + ")"};
}

}  // namespace tt
