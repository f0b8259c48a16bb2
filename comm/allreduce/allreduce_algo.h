// The all-reduce algorithms of our own (docs/design.md §5) and one object that runs any of them over
// one transport, channel and memory: the ring (ring_allreduce.h), recursive doubling and recursive
// halving-doubling (recursive_allreduce.h), the hierarchical one for ranks in nodes (hier_allreduce.h). Which
// one a bucket takes is the cost model's business (allreduce_cost.h) or the user's (--allreduce-algo).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "comm/allreduce/hier_allreduce.h"
#include "comm/allreduce/recursive_allreduce.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/channel.h"
#include "comm/reduce_memory.h"
#include "comm/transport.h"
#include "core/enum_names.h"
#include "core/profiler.h"

namespace tt::comm {

enum class ReduceAlgo : std::uint8_t {
  Ring,  // 2 (P-1) steps of 1/P of the buffer: bandwidth-optimal, latency grows with P
  Rd,    // recursive doubling: log2 P steps of the whole buffer: latency-optimal
  Rhd,   // recursive halving-doubling (Rabenseifner): 2 log2 P steps, the ring's bytes
  Hier,  // hierarchical: node ring reduce-scatter, inter-node ring all-reduce, node ring all-gather
};
inline constexpr std::array<ReduceAlgo, 4> kReduceAlgos = {ReduceAlgo::Ring, ReduceAlgo::Rd, ReduceAlgo::Rhd,
                                                           ReduceAlgo::Hier};

}  // namespace tt::comm

namespace tt {
template <>
struct EnumNames<comm::ReduceAlgo> {
  static constexpr std::pair<const char*, comm::ReduceAlgo> all[] = {{"ring", comm::ReduceAlgo::Ring},
                                                                     {"rd", comm::ReduceAlgo::Rd},
                                                                     {"rhd", comm::ReduceAlgo::Rhd},
                                                                     {"hier", comm::ReduceAlgo::Hier}};
};
}  // namespace tt

namespace tt::comm {

// What a run asks of our algorithms (--allreduce-algo): one for every bucket, or none, spelled "auto":
// the cost model's pick per bucket (engine/gradients/allreduce_selection.h).
inline constexpr const char* kAutoAlgo = "auto";
const char* algo_name(const std::optional<ReduceAlgo>& algo);  // kAutoAlgo for none
// Reads a request's spelling into `out`; false (and `out` untouched) for one that is none of "auto",
// "ring", "rd", "rhd", "hier".
bool parse_algo(std::string_view text, std::optional<ReduceAlgo>& out);

// "ring", "recursive doubling", "recursive halving-doubling", "hierarchical": for banners and reports.
const char* reduce_algo_title(ReduceAlgo a);

class Allreducer {
 public:
  // All references must outlive this object; one scratch (in `memory`) serves every algorithm;
  // options.node_ranks is the hierarchical one's node size.
  Allreducer(Transport& transport, Channel& channel, ReduceMemory& memory, RingOptions options = {},
             Profiler* profiler = nullptr);
  // In-place sum of data[0, count) over all ranks with `algo` (the same on every rank).
  void allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id);
  // The same in segments of `segment_bytes` for this call (the cost model's pick: allreduce_cost.h).
  void allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                     std::size_t segment_bytes);
  // The all-reduce's halves with `algo`, for sharded data parallelism: every algorithm leaves and takes
  // the ring's shard layout (RingGeometry::owned; Note [Shard handover], shard_handover.h), so a
  // bucket's halves may take different algorithms. Contract as RingAllreduce's halves.
  void reduce_scatter_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                          std::size_t segment_bytes);
  void all_gather(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                  std::size_t segment_bytes);
  RingAllreduce& ring() { return ring_; }

 private:
  void run(ReduceAlgo algo, Collective what, float* data, std::size_t count, const MessageContext& id,
           std::size_t segment_bytes);
  RingOptions options_;
  RingAllreduce ring_;
  RecursiveAllreduce recursive_;
  HierAllreduce hier_;
};

}  // namespace tt::comm
