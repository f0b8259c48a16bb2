// Learning-rate schedule: linear warmup, then cosine decay to min_lr_frac * max_lr.
#pragma once
#include <algorithm>
#include <cmath>

namespace tt {

// cosine: linear warmup, then cosine decay to min_lr_frac * max_lr; constant: max_lr throughout.
enum class ScheduleKind { Cosine, Constant };

struct LrSchedule {
  float max_lr = 3e-4f;
  float min_lr_frac = 0.1f;  // final LR as a fraction of max_lr
  long warmup_steps = 0;
  long total_steps = 1;
  ScheduleKind kind = ScheduleKind::Cosine;

  // step is 0-based (the LR used for the update that produces step+1).
  float at(long step) const {
    if (kind == ScheduleKind::Constant) return max_lr;
    if (warmup_steps > 0 && step < warmup_steps) {
      return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
    }
    const long decay_steps = std::max(1L, total_steps - warmup_steps);
    const double progress =
        std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps), 0.0, 1.0);
    const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
    const double min_lr = static_cast<double>(max_lr) * min_lr_frac;
    return static_cast<float>(min_lr + (static_cast<double>(max_lr) - min_lr) * cosine);
  }
};

}  // namespace tt
