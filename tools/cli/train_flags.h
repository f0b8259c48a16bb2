// Every flag of `teetrain train`, parsed into engine/run/train_options.h's TrainOptions.
#pragma once
#include <CLI/CLI.hpp>
#include <chrono>

#include "engine/run/train_options.h"

namespace tt::cli {

void add_train_options(CLI::App* cmd, TrainOptions& o);
// --timeout as the parse will read it (the last one given), before the parse: main bounds MPI_Init
// with it (Note [Start-up watchdog], engine/run/startup_watchdog.h). The default when it is absent or
// not a positive number (which the parse then refuses).
std::chrono::milliseconds timeout_before_parse(int argc, char** argv);

}  // namespace tt::cli
