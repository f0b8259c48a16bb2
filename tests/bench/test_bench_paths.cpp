// `bench allreduce`'s rows as the engine builds them from the gradient-path table (bench/bench_paths.h),
// under mpirun (P = 1, 2, 4): every row sums exactly, auto names the cost model's pick, and our rows
// carry the model's time. The sweep runs through the comm library's driver, as the CLI does.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "bench/allreduce_bench.h"
#include "bench/bench_paths.h"
#include "comm/allreduce/allreduce_cost.h"
#include "core/enum_names.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/run/rank_links.h"
#include "platform/platform.h"
#include "tests/comm/mpi_test_env.h"

namespace tt {
namespace {

TEST(BenchPaths, SmallSweepIsCorrectAndNamesAutosPick) {
  RankLinks links(MPI_COMM_WORLD, comm::Transport::kDefaultTimeout, comm::WaitMode::Adaptive,
                  comm::HostTransport::Shm, std::nullopt,
                  /*tee_on=*/false);
  // auto's model from a calibration file, so the pick below is known independently of this machine.
  const comm::CostModel model{.message_us = 10, .wire_ns_per_byte = 0.25, .reduce_ns_per_byte = 0.25};
  const std::string cost =
      (std::filesystem::temp_directory_path() / ("tt_bench_paths_" + std::to_string(links.rank()) + ".json"))
          .string();
  save_cost_model(cost, TeeMode::Off, {model, 0}, {{"ranks", links.size()}});
  const auto cpu = platform::platform_entry(DeviceKind::Cpu).make(platform::Options{});
  BenchPaths paths(links, *cpu, {TeeSettings{}, 1024, cost}, links.agree_link(/*emulated_links=*/false));

  bench::BenchOptions opt;
  opt.min_bytes = 1 << 10;
  opt.max_bytes = 64 << 10;
  opt.step_factor = 4;
  opt.warmup = 1;
  opt.iters = 3;
  std::vector<const bench::BenchMode*> modes;
  for (const char* m : {"ring", "rd", "rhd", "auto", "mpi"}) modes.push_back(bench::find_bench_mode(m));
  const auto recs = bench::run_allreduce_bench(links.transport(), paths.rows(modes), opt);
  ASSERT_EQ(recs.size(), 4U * 5U);  // 1, 4, 16, 64 KiB x {ring, rd, rhd, auto, mpi}
  for (const auto& r : recs) {
    EXPECT_TRUE(r.correct) << r.mode << " " << r.bytes;
    EXPECT_EQ(r.ranks, links.size());
    EXPECT_GT(r.time_us_median, 0.0);
    EXPECT_LE(r.time_us_min, r.time_us_median);
    EXPECT_LE(r.time_us_median, r.time_us_max);
    if (links.size() == 1) {
      EXPECT_EQ(r.busbw_gbps, 0.0);
    }
    if (r.mode == "auto") {
      EXPECT_EQ(r.picked, enum_name(comm::choose_algo(model, links.size(), r.count, 1 << 20).algo));
    }
    if (r.mode != "mpi" && links.size() > 1) {
      EXPECT_GT(r.predicted_us, 0.0) << r.mode;
    }
  }
  EXPECT_NE(bench::format_bench_table(recs).find("busbw"), std::string::npos);
  std::filesystem::remove(cost);
}

}  // namespace
}  // namespace tt
