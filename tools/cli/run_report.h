// The end-of-run report: per-phase time (mean per step; max and mean across ranks), counters, and
// the summary JSON of docs/design.md §8.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/core/profiler.h"
#include "engine/dist_context.h"
#include "engine/trainer.h"

namespace tt::cli {

// Collective: every rank must call it. Returns the "phases" and "counters" objects.
nlohmann::json gather_phase_report(DistContext& dist, const Profiler& profiler, long steps);
// Seconds per step of the phases the training thread runs one after another (data, ingress, forward,
// backward, exposed communication, optimizer, checkpoint, validation, bookkeeping; mean over ranks):
// what should add up to the step time. Seal, open, reduce and stage run on other threads and overlap
// these.
double main_thread_seconds(const nlohmann::json& report);
// Prints the phase table (rank 0 calls it).
void print_phase_table(const nlohmann::json& report, double step_seconds);

}  // namespace tt::cli
