// Trace files: per-rank parts merge into one Chrome/Perfetto JSON with the expected events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/run/trace_writer.h"

namespace tt {
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("tt_trace_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

TEST(TraceWriter, MergesPartsIntoOneValidTrace) {
  const auto dir = scratch("merge");
  const auto path = dir / "trace.json";
  Profiler p0(true);
  const auto t = Profiler::Clock::now();
  p0.record("forward", Lane::Compute, t, t + std::chrono::milliseconds(2));
  p0.record("bucket 0", Lane::Comm, t + std::chrono::milliseconds(1), t + std::chrono::milliseconds(3));
  p0.record("seal", Lane::Crypto, t, t + std::chrono::microseconds(500));
  write_trace_part(path, 0, p0.trace_events());
  write_trace_part(path, 1, {{"backward", 0, 10, 20}});
  ASSERT_TRUE(std::filesystem::exists(trace_part_path(path, 1)));

  EXPECT_EQ(merge_trace_parts(path, 3), 2);  // rank 2's part is "on another host"
  EXPECT_FALSE(std::filesystem::exists(trace_part_path(path, 0)));
  EXPECT_FALSE(std::filesystem::exists(trace_part_path(path, 1)));

  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  const auto& ev = j.at("traceEvents");
  int complete = 0;
  int thread_names = 0;
  bool saw_comm = false;
  for (const auto& e : ev) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("ts") && e.contains("dur"));
      if (e["name"] == "bucket 0") {
        saw_comm = true;
        EXPECT_EQ(e["pid"], 0);
        EXPECT_EQ(e["tid"], 1);
        EXPECT_EQ(e["dur"], 2000);
      }
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") ++thread_names;
  }
  EXPECT_EQ(complete, 4);
  EXPECT_EQ(thread_names, 6);  // 3 lanes x 2 ranks
  EXPECT_TRUE(saw_comm);
  std::filesystem::remove_all(dir);
}

TEST(TraceWriter, SingleProcessTraceAndUnwritablePath) {
  const auto dir = scratch("single");
  write_trace(dir / "t.json", 0, {{"forward", 0, 0, 5}});
  std::ifstream f(dir / "t.json");
  EXPECT_EQ(nlohmann::json::parse(f)["traceEvents"].back()["name"], "forward");
  EXPECT_THROW(write_trace(dir / "missing" / "t.json", 0, {}), std::exception);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tt
