// Every flag of `teetrain train`, parsed into engine/run/train_options.h's TrainOptions.
#pragma once
#include <CLI/CLI.hpp>

#include "engine/run/train_options.h"

namespace tt::cli {

void add_train_options(CLI::App* cmd, TrainOptions& o);

}  // namespace tt::cli
