// Every flag of `teetrain train`, parsed into engine/run/train_options.h's TrainOptions.
#pragma once
#include <CLI/CLI.hpp>
#include <chrono>

#include "engine/run/train_options.h"

namespace tt::cli {

void add_train_options(CLI::App* cmd, TrainOptions& o);
// --gpu-baseline and --gpu-fused-efficiency (Note [Fused attention baseline], core/emulated/emulated_gpu.h):
// train's emulated GPU and `bench emulated-step` take them alike.
void add_gpu_baseline_options(CLI::App* cmd, GpuBaseline& baseline, double& fused_efficiency);
// --timeout as the parse will read it (the last one given), before the parse: main bounds MPI_Init
// with it (Note [Start-up watchdog], engine/run/startup_watchdog.h). The default when it is absent or
// not a positive number (which the parse then refuses).
std::chrono::milliseconds timeout_before_parse(int argc, char** argv);

}  // namespace tt::cli
