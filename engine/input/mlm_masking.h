// Masked-language-model batches from text windows (BERT's pre-training recipe, Devlin et al. 2019
// §3.1): in each window of T tokens, max(1, round(0.15 T)) positions are chosen; each becomes [MASK]
// with probability 0.8, a random token with 0.1, and stays itself with 0.1. The targets hold the
// original tokens at the chosen positions and kIgnoreTarget everywhere else.
//
// The choice depends only on (seed, global sample index), never on the rank or the batch split, so a
// P-rank run sees the same masks as a one-rank run of the same global batch. In TEE mode it runs inside
// the rank, after the sealed window is opened: the host never sees which positions are predicted.
#pragma once
#include <cstdint>

#include "core/model.h"
#include "engine/trainer.h"

namespace tt {

struct MlmMasking {
  static constexpr uint64_t kStream = 0x6d6c6d;  // "mlm": apart from the data order and the init streams
  uint64_t seed = 0;
  int mask_token = 0;  // [MASK]: the model's last id
  int data_vocab = 0;  // random replacements are drawn from the data's ids [0, data_vocab)
  double rate = 0.15;  // share of each window predicted

  // Rewrites b.targets (and the chosen b.tokens) for samples [first_sample, first_sample + b.B).
  void apply(Batch& b, uint64_t first_sample) const;
  // The window loader's BatchFn, masked.
  BatchFn wrap(BatchFn windows) const;
};

}  // namespace tt
