#include "comm/allreduce/allreduce_algo.h"

#include <utility>

namespace tt::comm {

const char* algo_name(const std::optional<ReduceAlgo>& algo) {
  return algo ? enum_name(*algo) : kAutoAlgo;
}

bool parse_algo(std::string_view text, std::optional<ReduceAlgo>& out) {
  if (text == kAutoAlgo) {
    out.reset();
    return true;
  }
  const std::optional<ReduceAlgo> a = parse_enum<ReduceAlgo>(text);
  if (a) out = a;
  return a.has_value();
}

const char* reduce_algo_title(ReduceAlgo a) {
  switch (a) {
    case ReduceAlgo::Ring:
      return "ring";
    case ReduceAlgo::Rd:
      return "recursive doubling";
    case ReduceAlgo::Rhd:
      return "recursive halving-doubling";
    case ReduceAlgo::Hier:
      return "hierarchical";
  }
  return "?";
}

Allreducer::Allreducer(Transport& transport, Channel& channel, ReduceMemory& memory, RingOptions options,
                       Profiler* profiler)
    : options_(options),
      ring_(transport, channel, memory, options, profiler),
      recursive_(transport, channel, memory, options, profiler),
      hier_(transport, channel, memory, std::move(options), profiler) {}

void Allreducer::allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id) {
  allreduce_sum(algo, data, count, id, options_.segment_bytes);
}

void Allreducer::allreduce_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                               std::size_t segment_bytes) {
  run(algo, Collective::Allreduce, data, count, id, segment_bytes);
}

void Allreducer::reduce_scatter_sum(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                                    std::size_t segment_bytes) {
  run(algo, Collective::ReduceScatter, data, count, id, segment_bytes);
}

void Allreducer::all_gather(ReduceAlgo algo, float* data, std::size_t count, const MessageContext& id,
                            std::size_t segment_bytes) {
  run(algo, Collective::AllGather, data, count, id, segment_bytes);
}

void Allreducer::run(ReduceAlgo algo, Collective what, float* data, std::size_t count,
                     const MessageContext& id, std::size_t segment_bytes) {
  switch (algo) {
    case ReduceAlgo::Ring:
      ring_.run(what, data, count, id, segment_bytes);
      return;
    case ReduceAlgo::Rd:
      recursive_.run(RecursiveKind::Doubling, what, data, count, id, segment_bytes);
      return;
    case ReduceAlgo::Rhd:
      recursive_.run(RecursiveKind::HalvingDoubling, what, data, count, id, segment_bytes);
      return;
    case ReduceAlgo::Hier:
      hier_.run(what, data, count, id, segment_bytes);
      return;
  }
}

}  // namespace tt::comm
