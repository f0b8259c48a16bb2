#include "tee/identity/kx_binding.h"

#include <algorithm>

namespace tt::tee {

Sha256Digest kx_challenge(const Sha256Digest& verifier_nonce, std::uint32_t rank,
                          const PublicKey& kx_public) {
  std::array<std::uint8_t, 4> be_rank{};
  store_be32(be_rank.data(), rank);
  return Sha256().update(kKxBindingLabel).update(verifier_nonce).update(be_rank).update(kx_public).finish();
}

// Note [GPU nonce from the challenge].
Sha256Digest gpu_nonce_of(const Sha256Digest& challenge) {
  return Sha256().update(kKxGpuLabel).update(challenge).finish();
}

ReportData report_data_of(const Sha256Digest& challenge) {
  ReportData out{};  // the second half stays zero
  std::copy(challenge.begin(), challenge.end(), out.begin());
  return out;
}

}  // namespace tt::tee
