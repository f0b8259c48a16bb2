// `bench allreduce`'s rows, built from the gradient-path table (engine/gradients/gradient_paths.h) exactly as
// `train` builds its path: ring, rd, rhd and auto are the host row with that --allreduce-algo, mpi is
// the mpi row, and plain is the host row in plaintext (the ring as --tee off runs it) beside a
// sealed one.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bench/allreduce_bench.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/run/rank_links.h"

namespace tt {

struct BenchPathOptions {
  TeeSettings tee;        // the bench's --tee flags (sealed rows)
  int segment_kb = 1024;  // --segment-kb
  std::string cost;       // --allreduce-cost FILE ("": the mode's defaults)
};

class BenchPaths {
 public:
  // `links` (secured in TEE mode) and `platform` must outlive this object; `link` is the link the
  // ranks agreed on (RankLinks::agree_link).
  BenchPaths(RankLinks& links, platform::Platform& platform, const BenchPathOptions& o, LinkFacts link);
  BenchPaths(const BenchPaths&) = delete;
  BenchPaths& operator=(const BenchPaths&) = delete;

  // One bench row per mode, in order. Each row's all-reduces are labelled with steps of their own.
  std::vector<bench::BenchAlgo> rows(const std::vector<const bench::BenchMode*>& modes);

 private:
  // What one row is built from: the options and switches its GradientSetup refers to, and the path.
  struct Row {
    ParallelOptions parallel;
    TeeSwitches ts;
    std::unique_ptr<GradientPath> path;
    long step = 0;
  };
  Row& build(const bench::BenchMode& mode);

  RankLinks& links_;
  platform::Platform& platform_;
  BenchPathOptions o_;
  LinkFacts link_;
  ComputeOptions compute_;    // the host's CPU (bench allreduce runs no model)
  comm::PlainChannel plain_;  // the plain row's channel
  Profiler profiler_;     // the emulated platform's clock would live here; the cpu platform records nothing
  std::deque<Row> rows_;  // stable addresses: each path keeps references to its options and switches
};

}  // namespace tt
