#include "bench/bench_paths.h"

#include "core/enum_names.h"
#include "engine/host_layout.h"

namespace tt {

namespace {

// Every bench all-reduce is bucket 0, as one gradient bucket of a run would be: the messages read
// "bucket 0" whatever the size, and AlgoSelection prices each new size of the bucket afresh.
constexpr int kBucket = 0;

}  // namespace

BenchPaths::BenchPaths(RankLinks& links, platform::Platform& platform, const BenchPathOptions& o)
    : links_(links), platform_(platform), o_(o) {}

BenchPaths::Row& BenchPaths::build(bench::BenchAlgorithm mode) {
  using B = bench::BenchAlgorithm;
  Row& row = rows_.emplace_back();
  const bool plain = mode == B::Plain;
  row.parallel.allreduce = mode == B::Mpi ? AllreduceAlgo::Mpi : AllreduceAlgo::Ring;
  if (mode != B::Mpi && !plain) row.parallel.algo = *parse_enum<comm::AlgoRequest>(enum_name(mode));
  row.parallel.segment_kb = o_.segment_kb;
  row.parallel.cost = o_.cost;
  row.ts = plain ? TeeSwitches{} : resolve_tee(o_.tee, /*gpu_gradients=*/false);
  comm::Channel& channel = plain ? plain_ : links_.channel();
  const GradientSetup setup{row.parallel,
                            compute_,
                            row.ts,
                            platform_,
                            &links_.mpi(),
                            links_.transport(),
                            channel,
                            plain ? nullptr : links_.sealed(),
                            ranks_on_this_host(),
                            profiler_,
                            links_.shm_inline_bytes()};
  row.path = build_gradient_path(
      gradient_path(mode == B::Mpi ? GradientPathKind::Mpi : GradientPathKind::Host), setup);
  return row;
}

std::vector<bench::BenchAlgo> BenchPaths::rows(const std::vector<bench::BenchAlgorithm>& modes) {
  std::vector<bench::BenchAlgo> out;
  for (const bench::BenchAlgorithm mode : modes) {
    Row& row = build(mode);
    bench::BenchAlgo b{enum_name(mode), {}, {}, {}};
    b.allreduce = [&row](float* d, std::size_t n) { row.path->sum(d, n, row.step++, kBucket); };
    if (AlgoSelection* sel = row.path->selection(); sel != nullptr && mode != bench::BenchAlgorithm::Plain) {
      b.picks = [sel](std::size_t n) { return std::string(enum_name(sel->pick(kBucket, n))); };
      b.predicts = [sel](std::size_t n) { return sel->predicted_us(kBucket, n); };
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace tt
