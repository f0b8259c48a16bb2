// The all-reduce algorithms of our own (docs/design.md §5) and one object that runs any of them over
// one transport, channel and memory: the ring (ring_allreduce.h), recursive doubling and recursive
// halving-doubling (recursive_allreduce.h). Which one a bucket takes is the cost model's business
// (allreduce_cost.h) or the user's (--allreduce-algo).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "comm/channel.h"
#include "comm/recursive_allreduce.h"
#include "comm/ring_allreduce.h"
#include "comm/ring_memory.h"
#include "comm/transport.h"
#include "core/enum_names.h"
#include "core/profiler.h"

namespace tt::comm {

enum class ReduceAlgo : std::uint8_t {
  Ring,  // 2 (P-1) steps of 1/P of the buffer: bandwidth-optimal, latency grows with P
  Rd,    // recursive doubling: log2 P steps of the whole buffer: latency-optimal
  Rhd,   // recursive halving-doubling (Rabenseifner): 2 log2 P steps, the ring's bytes
};
inline constexpr std::array<ReduceAlgo, 3> kReduceAlgos = {ReduceAlgo::Ring, ReduceAlgo::Rd, ReduceAlgo::Rhd};

// What a run asks for: one algorithm for every bucket, or the cost model's pick per bucket.
enum class AlgoRequest : std::uint8_t { Auto, Ring, Rd, Rhd };

}  // namespace tt::comm

namespace tt {
template <>
struct EnumNames<comm::ReduceAlgo> {
  static constexpr std::pair<const char*, comm::ReduceAlgo> all[] = {
      {"ring", comm::ReduceAlgo::Ring}, {"rd", comm::ReduceAlgo::Rd}, {"rhd", comm::ReduceAlgo::Rhd}};
};
template <>
struct EnumNames<comm::AlgoRequest> {
  static constexpr std::pair<const char*, comm::AlgoRequest> all[] = {{"auto", comm::AlgoRequest::Auto},
                                                                      {"ring", comm::AlgoRequest::Ring},
                                                                      {"rd", comm::AlgoRequest::Rd},
                                                                      {"rhd", comm::AlgoRequest::Rhd}};
};
}  // namespace tt

namespace tt::comm {

// "ring", "recursive doubling", "recursive halving-doubling": for banners and reports.
const char* reduce_algo_title(ReduceAlgo a);

class Allreducer {
 public:
  // All references must outlive this object; one scratch (in `memory`) serves every algorithm.
  Allreducer(Transport& transport, Channel& channel, RingMemory& memory, RingOptions options = {},
             Profiler* profiler = nullptr);
  // In-place sum of data[0, count) over all ranks with `algo` (the same on every rank).
  void allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id);
  // The same in segments of `segment_bytes` for this call (the cost model's pick: allreduce_cost.h).
  void allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                     std::size_t segment_bytes);
  RingAllreduce& ring() { return ring_; }

 private:
  RingOptions options_;
  RingAllreduce ring_;
  RecursiveAllreduce recursive_;
};

}  // namespace tt::comm
