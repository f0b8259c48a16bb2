// The EmulatedModel configuration of a GPT-2 (engine/emulated_model.h) from its preset's JSON, without
// building the model: what `train --compute emulate` and the reproduction study run.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/emulated_model.h"

namespace tt::study {

// For `train --compute emulate`: the EmulatedModel configuration of a GPT-2 described by
// model_config_json() (keys n_layer, n_head, n_embd, vocab, context, name) — the real parameter
// table and FLOP count, computed without building a Gpt2 (whose constructor would allocate and zero
// parameters and gradients: 6 GiB per rank for gpt2-large). grad_backing_bytes gets
// default_grad_backing_bytes(). The table is Gpt2::param_table(), the one the real model uses.
EmulatedModelConfig emulated_model_config(const nlohmann::json& model_config, const EmulatedGpu& gpu);

}  // namespace tt::study
