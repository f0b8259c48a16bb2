#include "engine/input/mlm_masking.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/backend.h"
#include "core/rng.h"

namespace tt {

void MlmMasking::apply(Batch& b, uint64_t first_sample) const {
  if (data_vocab <= 0 || data_vocab > mask_token) {
    throw InputError("masked LM: the data's ids [0, " + std::to_string(data_vocab) +
                     ") must lie below [MASK] = " + std::to_string(mask_token));
  }
  const auto T = static_cast<std::size_t>(b.T);
  const std::size_t chosen = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(rate * b.T)));
  std::vector<uint32_t> order(T);
  b.targets.assign(b.tokens.size(), kIgnoreTarget);
  for (int i = 0; i < b.B; ++i) {
    Rng rng(derive_seed(seed, kStream, first_sample + static_cast<uint64_t>(i)));
    int32_t* tok = b.tokens.data() + static_cast<std::size_t>(i) * T;   // (T)
    int32_t* tgt = b.targets.data() + static_cast<std::size_t>(i) * T;  // (T)
    // The first `chosen` entries of a partial Fisher-Yates shuffle: positions without repeats.
    std::iota(order.begin(), order.end(), 0u);
    for (std::size_t k = 0; k < std::min(chosen, T); ++k) {
      std::swap(order[k], order[k + rng.below(T - k)]);
      const uint32_t at = order[k];
      tgt[at] = tok[at];
      const double u = rng.uniform();
      if (u < 0.8) {
        tok[at] = mask_token;
      } else if (u < 0.9) {
        tok[at] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(data_vocab)));
      }
    }
  }
}

BatchFn MlmMasking::wrap(BatchFn windows) const {
  return [m = *this, windows = std::move(windows)](Batch& b, uint64_t first_sample, int count) {
    windows(b, first_sample, count);
    m.apply(b, first_sample);
  };
}

}  // namespace tt
