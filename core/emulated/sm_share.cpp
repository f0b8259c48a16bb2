#include "core/emulated/sm_share.h"

#include <algorithm>
#include <chrono>

namespace tt {

void SmShare::lend(TimePoint begin, TimePoint end) {
  if (!(begin < end)) return;
  std::lock_guard lock(mu_);
  lent_.emplace_back(begin, end);
}

double SmShare::settle(TimePoint compute_now) {
  std::lock_guard lock(mu_);
  double s = 0;
  for (const auto& [begin, end] : lent_)
    if (begin < compute_now) s += std::chrono::duration<double>(std::min(end, compute_now) - begin).count();
  lent_.clear();
  return s;
}

}  // namespace tt
