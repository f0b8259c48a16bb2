#include "engine/run/trace_writer.h"

#include <array>
#include <fstream>
#include <string>

#include "base/error.h"
#include "engine/file_util.h"
#include "tee/regular_file.h"

namespace tt {
namespace {

constexpr std::array<const char*, 3> kLaneNames = {"compute", "communication", "crypto"};

nlohmann::json meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  const tee::UniqueFd fd = tee::open_output_file(path, "--trace", tee::OutputMode::Truncate);
  tee::write_output(fd.get(), j.dump() + "\n", path, "--trace");
}

nlohmann::json wrap(nlohmann::json events) {
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"producer", "teetrain"}}}};
}

}  // namespace

std::filesystem::path trace_part_path(const std::filesystem::path& path, int rank) {
  return std::filesystem::path(path.string() + ".rank" + std::to_string(rank) + ".part");
}

nlohmann::json trace_events_json(int rank, const std::vector<TraceEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  out.push_back(meta("process_name", rank, 0, "rank " + std::to_string(rank)));
  out.push_back({{"ph", "M"},
                 {"name", "process_sort_index"},
                 {"pid", rank},
                 {"tid", 0},
                 {"args", {{"sort_index", rank}}}});
  for (int lane = 0; lane < static_cast<int>(kLaneNames.size()); ++lane) {
    out.push_back(meta("thread_name", rank, lane, kLaneNames[static_cast<std::size_t>(lane)]));
    out.push_back({{"ph", "M"},
                   {"name", "thread_sort_index"},
                   {"pid", rank},
                   {"tid", lane},
                   {"args", {{"sort_index", lane}}}});
  }
  for (const TraceEvent& e : events) {
    out.push_back({{"name", e.name},
                   {"ph", "X"},
                   {"pid", rank},
                   {"tid", e.lane},
                   {"ts", e.begin_us},
                   {"dur", e.dur_us}});
  }
  return out;
}

void write_trace_part(const std::filesystem::path& path, int rank, const std::vector<TraceEvent>& events) {
  write_json(trace_part_path(path, rank), trace_events_json(rank, events));
}

int merge_trace_parts(const std::filesystem::path& path, int world) {
  nlohmann::json all = nlohmann::json::array();
  std::vector<std::filesystem::path> merged;
  for (int r = 0; r < world; ++r) {
    const auto part = trace_part_path(path, r);
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(part, ec)))
      continue;  // a rank on another host: its part is on its own disk
    const std::vector<std::byte> bytes = read_file_bytes(part);  // a FIFO is refused, not waited on
    nlohmann::json events = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                                  reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                                  nullptr, /*allow_exceptions=*/false);
    if (!events.is_array())
      throw InputError("trace part " + part.string() + " is not a JSON array of events");
    for (auto& ev : events) all.push_back(std::move(ev));
    merged.push_back(part);
  }
  write_json(path, wrap(std::move(all)));
  for (const auto& p : merged) {
    std::error_code ec;
    std::filesystem::remove(p, ec);  // a leftover part is harmless; the merged file is complete
  }
  return static_cast<int>(merged.size());
}

void write_trace(const std::filesystem::path& path, int rank, const std::vector<TraceEvent>& events) {
  write_json(path, wrap(trace_events_json(rank, events)));
}

}  // namespace tt
