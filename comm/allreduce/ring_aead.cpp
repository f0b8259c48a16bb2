#include "comm/allreduce/ring_aead.h"

namespace tt::comm {

RingAeadBytes ring_aead_bytes(std::size_t count, int ranks, AllGatherMode all_gather) {
  if (ranks < 2 || count == 0) return {};
  const auto p = static_cast<std::size_t>(ranks);
  const std::size_t chunk = (count + p - 1) / p * sizeof(float);
  const std::size_t gather_seals = all_gather == AllGatherMode::ForwardWire ? 1 : p - 1;
  return {.sealed = chunk * (p - 1 + gather_seals), .opened = chunk * 2 * (p - 1)};
}

double aead_time_us(const RingAeadBytes& work, double seal_gbps, double open_gbps) {
  // GB/s = 1e9 bytes/s = 1e3 bytes/us.
  return static_cast<double>(work.sealed) / (seal_gbps * 1e3) +
         static_cast<double>(work.opened) / (open_gbps * 1e3);
}

}  // namespace tt::comm
