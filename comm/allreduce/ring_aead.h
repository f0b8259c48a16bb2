// What sealing costs a ring all-reduce, from its geometry alone: the bench's bound on a sealed ring
// (what the crypto alone allows on these cores), checked against what the sealed channel really did.
#pragma once
#include <cstddef>

#include "comm/allreduce/ring_allreduce.h"

namespace tt::comm {

// The AEAD work of one sealed ring all-reduce on a rank holding a largest chunk: plaintext bytes it
// seals and opens (docs/design.md §5). Scatter-reduce seals and opens P-1 chunks; the all-gather opens
// P-1 and seals 1 (forward-ciphertext: the owner only) or P-1 (a re-seal at every hop).
struct RingAeadBytes {
  std::size_t sealed = 0;
  std::size_t opened = 0;
};
RingAeadBytes ring_aead_bytes(std::size_t count, int ranks, AllGatherMode all_gather);

// The time that AEAD work takes at the given rates (GB/s, 1e9 bytes): no sealed ring on these cores
// can be faster, however well it overlaps sealing with the wire.
double aead_time_us(const RingAeadBytes& work, double seal_gbps, double open_gbps);

}  // namespace tt::comm
