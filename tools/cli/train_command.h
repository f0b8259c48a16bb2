// What `teetrain train` does once its flags are parsed, for the commands that run trainings: `train`
// itself and `runs` (cmd_runs.cpp: many trainings, one after another, in one process).
#pragma once
#include <memory>

#include "engine/run/run_services.h"
#include "engine/run/train_options.h"

namespace tt::cli {

// Builds and runs the training `opts` describes, on this process's ranks (one, or --ranks-per-process
// virtual ranks as threads), and prints its banner, phase table, result line and --summary exactly as
// `train` does. `key_file_given`: --key-file was on the command line. Throws what the run throws.
void train_command(const std::shared_ptr<const TrainOptions>& opts, bool key_file_given,
                   const RunServices& services);

}  // namespace tt::cli
