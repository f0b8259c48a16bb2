// The run-wide sample order shared by every loader (plain and sealed tokens): sample g maps to
//   epoch = g / W,  j = g % W,  window = perm_epoch(j)
// where perm_epoch is a Fisher-Yates permutation of [0, W) drawn from derive_seed(seed, stream,
// epoch), or the identity without shuffling. A pure function of (seed, g): any number of ranks can
// take disjoint slices and a resumed run continues the same stream.
#pragma once
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace tt {

class WindowOrder {
 public:
  static constexpr uint64_t kDataStream = 0x64617461;  // "data": keeps data order apart from other streams

  WindowOrder(uint64_t num_windows, uint64_t seed, bool shuffle)
      : num_windows_(num_windows), seed_(seed), shuffle_(shuffle) {}

  uint64_t num_windows() const { return num_windows_; }

  uint64_t window_of(uint64_t g) {
    const uint64_t j = g % num_windows_;
    return shuffle_ ? permutation(g / num_windows_)[j] : j;
  }

 private:
  // Caches the current epoch's permutation (W uint32: 4 bytes per window).
  const std::vector<uint32_t>& permutation(uint64_t epoch) {
    if (!perm_.empty() && perm_epoch_ == epoch) return perm_;
    perm_.resize(num_windows_);
    std::iota(perm_.begin(), perm_.end(), 0u);
    Rng rng(derive_seed(seed_, kDataStream, epoch));
    for (uint64_t i = num_windows_ - 1; i > 0; --i) std::swap(perm_[i], perm_[rng.below(i + 1)]);
    perm_epoch_ = epoch;
    return perm_;
  }

  uint64_t num_windows_;
  uint64_t seed_;
  bool shuffle_;
  uint64_t perm_epoch_ = 0;
  std::vector<uint32_t> perm_;  // (W) window order of epoch perm_epoch_; empty until first use
};

}  // namespace tt
