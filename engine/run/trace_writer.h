// Chrome / Perfetto trace files from the profiler's events (`teetrain train --trace FILE`).
//
// Format: the Trace Event Format's JSON object form, {"traceEvents": [...]}, with one complete event
// (ph "X", ts/dur in microseconds) per profiler event; pid = rank, tid = lane (0 compute,
// 1 communication, 2 crypto), plus process_name / thread_name metadata events so Perfetto labels
// the rows "rank 1" / "compute". Open the file at https://ui.perfetto.dev or chrome://tracing.
//
// Multi-rank runs: every rank writes its own part (FILE.rank<r>.part, a JSON array of events), then,
// after a barrier, rank 0 merges the parts it can see into FILE and removes them. Ranks on other hosts
// leave their parts on their own disks; merge_trace_parts reports how many it found. Timestamps are
// microseconds since each rank's profiler started: ranks start within milliseconds of each other,
// which is close enough to see overlap inside a rank but not to compare ranks to the microsecond.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/profiler.h"

namespace tt {

// The name of rank r's part file: "<path>.rank<r>.part".
std::filesystem::path trace_part_path(const std::filesystem::path& path, int rank);
// This rank's events as trace-event JSON (metadata first, then one "X" event per TraceEvent).
nlohmann::json trace_events_json(int rank, const std::vector<TraceEvent>& events);
// Writes rank's part file (throws InputError if it cannot be written).
void write_trace_part(const std::filesystem::path& path, int rank, const std::vector<TraceEvent>& events);
// Merges the parts of ranks [0, world) that exist into `path` ({"traceEvents": [...]}) and removes
// them; returns how many parts were merged. Throws InputError if `path` cannot be written or a part
// is not valid JSON.
int merge_trace_parts(const std::filesystem::path& path, int world);
// Single-process convenience: writes `path` directly.
void write_trace(const std::filesystem::path& path, int rank, const std::vector<TraceEvent>& events);

}  // namespace tt
