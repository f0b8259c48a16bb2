#include <algorithm>

#include "tee/cuda/gpu_aead.h"
#include "tee/detail/nonce.h"

namespace tt::tee::cuda {

void place_at(GpuMessage& m, const StreamPosition& at) {
  const detail::Nonce nonce = detail::nonce_at(at);
  std::copy(nonce.bytes.begin(), nonce.bytes.end(), m.nonce.begin());
}

}  // namespace tt::tee::cuda
