// What a training step holds on each rank under --shard at P ranks: float32 parameters, gradients and
// AdamW's m and v (16 bytes per parameter in DDP), one batch's activations and, with ZeRO-3, the units
// gathered whole. ZeRO-1 divides the optimizer state by P, ZeRO-2 the gradients too (Note [Shard
// layout], engine/gradients/shard.h), ZeRO-3 the parameters as well, and then holds the unit being
// computed whole plus the next one, prefetched while the current one computes: two of the largest unit
// (a transformer block, a ResNet stage; training gathers per bucket: Note [ZeRO-3 units follow
// the buckets], engine/gradients/ddp_reducer.h). `teetrain models --ranks P --shard S`, a run's banner and
// summary print it, and an emulated GPU refuses a run it cannot hold (TrainingRun's build_model).
#pragma once
#include <algorithm>
#include <cstddef>

#include "engine/run_choices.h"
#include "models/model_registry.h"

namespace tt {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The activations the modelled TEE-off step keeps: a fused attention kernel stores no (B, NH, T, T)
// tensor (Note [Fused attention baseline], core/emulated/emulated_gpu.h).
inline ModelMemory for_baseline(ModelMemory m, GpuBaseline baseline) {
  if (baseline == GpuBaseline::FusedAttention)
    m.activation_bytes -= std::min(m.activation_bytes, m.attention_bytes);
  return m;
}

struct StateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double gathered = 0;  // ZeRO-3: two whole units (the one computing, the one prefetched); else 0
  double state() const { return params + grads + optimizer; }  // the per-parameter part
  double total() const { return state() + activations + gathered; }
};

// `bf16`: an emulated mixed-precision run keeps a 16-bit copy of the parameters it holds (for the
// matmuls) and its activations in 2-byte elements, as mixed-precision training does.
inline StateBytes state_bytes_per_rank(const ModelMemory& m, ShardStage stage, int ranks, bool bf16 = false) {
  const double n = static_cast<double>(m.params);
  const double p = static_cast<double>(std::max(ranks, 1));
  const bool zero3 = stage == ShardStage::Params;
  const double held = zero3 ? n / p : n;  // parameters this rank keeps between steps
  const double gathered = zero3 ? 2.0 * 4.0 * static_cast<double>(m.unit_params) : 0.0;
  return StateBytes{.params = 4 * held + (bf16 ? 2 * held : 0.0),
                    .grads = stage == ShardStage::Gradients || zero3 ? 4 * n / p : 4 * n,
                    .optimizer = stage == ShardStage::None ? 8 * n : 8 * n / p,
                    .activations = static_cast<double>(m.activation_bytes) * (bf16 ? 0.5 : 1.0),
                    .gathered = gathered * (bf16 ? 1.5 : 1.0)};
}

// "ZeRO-3", "DDP": the name the literature gives each stage.
inline const char* stage_label(ShardStage s) {
  constexpr const char* kLabels[] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
  return kLabels[static_cast<int>(s)];
}

}  // namespace tt
