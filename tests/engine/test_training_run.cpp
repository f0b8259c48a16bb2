// engine/run/training_run.h as a library, without the CLI: a front end fills TrainOptions, builds a
// TrainingRun, runs it and reads what it reports. Runs under mpirun (P = 1 and 2): the run's ranks are
// MPI_COMM_WORLD's, as in `teetrain train`.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/token_shard.h"
#include "engine/run/training_run.h"
#include "tests/comm/mpi_test_env.h"

namespace tt {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// One byte-level shard every rank reads (rank 0 writes it; the others wait at the barrier).
std::string tiny_shard() {
  const auto path = std::filesystem::temp_directory_path() / "tt_training_run_test" / "tiny_train_000000.bin";
  if (world_rank() == 0) {
    std::filesystem::create_directories(path.parent_path());
    std::vector<uint16_t> tokens(4096);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7 + i / 13) % 256);
    write_token_shard(path, tokens, 256);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path.string();
}

TrainOptions tiny_options() {
  TrainOptions o;
  o.model.name = "gpt2-tiny";
  o.data.path = tiny_shard();
  o.schedule.steps = 4;
  o.schedule.batch = 2;
  o.schedule.seq = 16;
  o.schedule.warmup = 0;
  o.compute.threads = 1;
  o.output.no_progress = true;
  o.parallel.bucket_mb = 0.01;  // several buckets, so the reducer's overlap path runs
  return o;
}

TEST(TrainingRun, TrainsAndReportsWithoutTheCli) {
  TrainingRun run(tiny_options());
  const RunDescription d = run.describe();
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  EXPECT_EQ(d.world, world);
  EXPECT_EQ(d.model, "gpt2-tiny");
  EXPECT_GT(d.params, 0U);
  EXPECT_EQ(d.tee, "tee off");
  EXPECT_FALSE(d.images);
  EXPECT_GT(d.buckets, 1U);

  const TrainResult r = run.run();
  EXPECT_EQ(r.steps, 4);
  EXPECT_TRUE(std::isfinite(r.final_loss));
  EXPECT_GT(r.final_loss, 0.0);
  EXPECT_EQ(r.params_sha256.size(), 64U);

  const RunReport report = run.finish(r);  // collective
  const nlohmann::json s = run.summary(r, report);
  EXPECT_EQ(s.at("world_size"), world);
  EXPECT_EQ(s.at("params_sha256"), r.params_sha256);
  // 16 bytes of FP32 state per parameter, plus a batch's activations.
  EXPECT_GT(s.at("memory_gib_per_rank").get<double>(), 16.0 * static_cast<double>(d.params) / (1 << 30));
  EXPECT_EQ(s.at("memory_gib_per_rank").get<double>(), d.memory_gib);
  EXPECT_EQ(s.at("config").at("model").at("name"), "gpt2-tiny");
  // The training thread's phases account for the step (within the profiler's bookkeeping).
  const double accounted = s.at("phases_accounted_s").get<double>();
  EXPECT_GT(accounted, 0.0);
  EXPECT_LE(accounted, 1.05 * r.step_seconds_mean + 1e-3);
  EXPECT_TRUE(report.adversary_view.empty());
}

TEST(TrainingRun, SameOptionsSameParameters) {
  // The engine's contract for a front end: same options, same seed, same bits.
  TrainingRun a(tiny_options());
  const TrainResult ra = a.run();
  a.finish(ra);
  TrainingRun b(tiny_options());
  const TrainResult rb = b.run();
  b.finish(rb);
  EXPECT_EQ(ra.params_sha256, rb.params_sha256);
}

TEST(TrainingRun, ConflictingOptionsAreRefusedBeforeAnyCollective) {
  // validate() runs first on every rank, so each rank throws alone and none waits on a peer.
  TrainOptions o = tiny_options();
  o.parallel.allreduce = AllreduceProvider::Mpi;
  o.tee.settings.mode = TeeMode::Fast;
  try {
    TrainingRun run(o);
    FAIL() << "a sealed MPI_Allreduce was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mpi"), std::string::npos) << e.what();
  }
  o = tiny_options();
  o.model.name = "gpt3";
  EXPECT_THROW(TrainingRun run(o), InputError);
}

}  // namespace
}  // namespace tt
