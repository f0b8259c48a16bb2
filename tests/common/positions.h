// Stream positions other than 0 for tests (a known-answer nonce, a counter near its end), drawn the way
// production code must: from a counter of the test's own, moved forward (Note [A counter is never
// duplicated], tee/crypto/stream_position.h). There is no way to resume a counter somebody else owns.
#pragma once
#include <cstdint>

#include "tee/crypto/stream_position.h"

namespace tt::testing {

// A counter of `origin` whose next position is `next`.
inline tee::MessageCounter counter_at(std::uint32_t origin, std::uint64_t next) {
  tee::MessageCounter c(origin);
  if (next > 0) c.skip_to(next - 1);
  return c;
}

// Position (origin, counter), from a counter used for nothing else.
inline tee::StreamPosition position_at(std::uint32_t origin, std::uint64_t counter) {
  return tee::MessageCounter(origin).skip_to(counter);
}

}  // namespace tt::testing
