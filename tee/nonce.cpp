#include "tee/nonce.h"

#include <limits>
#include <string>

#include "tee/errors.h"

namespace tt::tee {

Nonce NonceSequence::next() {
  // UINT64_MAX is never handed out, so "next_ == max" means "exhausted" without a separate flag.
  if (next_ == std::numeric_limits<std::uint64_t>::max())
    throw CryptoError("nonce counter of origin " + std::to_string(origin_) +
                      " exhausted: the key must be rotated before sealing more");
  return Nonce::make(origin_, next_++);
}

}  // namespace tt::tee
