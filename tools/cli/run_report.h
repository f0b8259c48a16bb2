// The end-of-run phase table: per-phase time (mean per step; max and mean across ranks) and counters,
// from engine/run/training_run.h's gather_phase_report.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/run/training_run.h"

namespace tt::cli {

// Prints the phase table (rank 0 calls it).
// virtual_time: the times are an emulated run's virtual time (docs/design.md §11); the header says so.
void print_phase_table(const nlohmann::json& report, double step_seconds, bool virtual_time = false);

}  // namespace tt::cli
