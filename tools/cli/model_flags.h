// The model flags of the commands that build a model (--model and the shape overrides), parsed into
// models/model_registry.h's ModelOptions.
#pragma once
#include <CLI/CLI.hpp>

#include "models/model_registry.h"

namespace tt::cli {

void add_model_options(CLI::App* cmd, ModelOptions& opts);

}  // namespace tt::cli
