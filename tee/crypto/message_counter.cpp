#include <limits>
#include <string>

#include "tee/crypto/stream_position.h"
#include "tee/errors.h"

namespace tt::tee {

StreamPosition MessageCounter::next() {
  // UINT64_MAX is never handed out, so "next_ == max" means "exhausted" without a separate flag.
  if (next_ == kExhausted)
    throw CryptoError("message counter of origin " + std::to_string(origin_) +
                      " exhausted: the key must be rotated before sealing more");
  return StreamPosition(origin_, next_++);
}

StreamPosition MessageCounter::skip_to(std::uint64_t counter) {
  if (counter < next_)
    throw CryptoError("message counter of origin " + std::to_string(origin_) + ": position " +
                      std::to_string(counter) + " was already passed (next is " + std::to_string(next_) +
                      "); a counter never goes back");
  next_ = counter;
  return next();
}

}  // namespace tt::tee
