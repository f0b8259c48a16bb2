#include "comm/reduce_memory.h"

namespace tt::comm {

ReduceScratch HostReduceMemory::scratch(std::size_t reduce_floats, std::size_t wire_bytes) {
  // Grow only: later calls with smaller buckets reuse the memory (and its pages stay faulted in).
  if (reduce_.size() < reduce_floats) reduce_.resize(reduce_floats);
  if (wire_out_.size() < wire_bytes) wire_out_.resize(wire_bytes);
  if (wire_in_.size() < wire_bytes) wire_in_.resize(wire_bytes);
  return {reduce_.data(), wire_out_, wire_in_};
}

std::size_t HostReduceMemory::scratch_bytes() const {
  return reduce_.size() * sizeof(float) + wire_out_.size() + wire_in_.size();
}

// Plain loop; the compiler vectorises it. No FMA or reassociation: one add per element.
void add_floats(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace tt::comm
