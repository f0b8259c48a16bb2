// What the training state (float32 parameters, gradients and AdamW's m and v) costs each rank under
// --shard at P ranks: DDP keeps 16 bytes per parameter on every rank; ZeRO-1 divides the optimizer
// state by P, ZeRO-2 the gradients too (Note [Shard layout], engine/gradients/shard.h), ZeRO-3 the
// parameters too (between their uses: the units being computed are gathered beside them, Note [ZeRO-3
// units follow the buckets], engine/gradients/ddp_reducer.h). `teetrain
// models --ranks P --shard S` and a run's banner and summary print it.
#pragma once
#include <algorithm>
#include <cstddef>

#include "engine/run_choices.h"

namespace tt {

struct StateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

inline StateBytes state_bytes_per_rank(std::size_t num_params, ShardStage stage, int ranks) {
  const double n = static_cast<double>(num_params);
  const double p = static_cast<double>(std::max(ranks, 1));
  const bool grads_sharded = stage == ShardStage::Gradients || stage == ShardStage::Params;
  return StateBytes{.params = stage == ShardStage::Params ? 4 * n / p : 4 * n,
                    .grads = grads_sharded ? 4 * n / p : 4 * n,
                    .optimizer = stage == ShardStage::None ? 8 * n : 8 * n / p};
}

}  // namespace tt
