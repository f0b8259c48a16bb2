#include <limits>
#include <string>

#include "tee/errors.h"
#include "tee/stream_position.h"

namespace tt::tee {

StreamPosition MessageCounter::next() {
  // UINT64_MAX is never handed out, so "next_ == max" means "exhausted" without a separate flag.
  if (next_ == std::numeric_limits<std::uint64_t>::max())
    throw CryptoError("message counter of origin " + std::to_string(origin_) +
                      " exhausted: the key must be rotated before sealing more");
  return StreamPosition(origin_, next_++);
}

}  // namespace tt::tee
