#include "bench/bench_paths.h"

#include "core/enum_names.h"
#include "engine/run/host_layout.h"

namespace tt {

namespace {

// Every bench all-reduce is bucket 0, as one gradient bucket of a run would be: the messages read
// "bucket 0" whatever the size, and AlgoSelection prices each new size of the bucket afresh.
constexpr int kBucket = 0;

}  // namespace

BenchPaths::BenchPaths(RankLinks& links, platform::Platform& platform, const BenchPathOptions& o,
                       LinkFacts link)
    : links_(links), platform_(platform), o_(o), link_(std::move(link)) {}

// A row is a run's gradient path: the provider and algorithm the mode names, on this bench's links,
// built as `train` builds its own (engine/gradients/gradient_paths.h).
BenchPaths::Row& BenchPaths::build(const bench::BenchMode& mode) {
  Row& row = rows_.emplace_back();
  row.parallel.allreduce = mode.provider;
  row.parallel.algo = mode.provider == AllreduceProvider::Ours ? mode.algo : comm::ReduceAlgo::Ring;
  row.parallel.segment_kb = o_.segment_kb;
  row.parallel.cost = o_.cost;
  row.ts = mode.plain ? TeeSwitches{} : resolve_tee(o_.tee, /*gpu_gradients=*/false);
  row.path = build_gradient_path(GradientSetup{.parallel = row.parallel,
                                               .compute = compute_,
                                               .tee = row.ts,
                                               .platform = platform_,
                                               .mpi = links_.mpi(),
                                               .transport = links_.transport(),
                                               .channel = mode.plain ? plain_ : links_.channel(),
                                               .sealed = mode.plain ? nullptr : links_.sealed(),
                                               .ranks_on_host = ranks_on_this_host(),
                                               .profiler = profiler_,
                                               .link = link_,
                                               .adversary = links_.wire().active()});
  return row;
}

std::vector<bench::BenchAlgo> BenchPaths::rows(const std::vector<const bench::BenchMode*>& modes) {
  std::vector<bench::BenchAlgo> out;
  for (const bench::BenchMode* mode : modes) {
    Row& row = build(*mode);
    bench::BenchAlgo b{mode->name, {}, {}, {}};
    b.allreduce = [&row](float* d, std::size_t n) { row.path->sum(d, n, row.step++, kBucket); };
    if (AlgoSelection* sel = row.path->selection(); sel != nullptr && !mode->plain) {
      b.picks = [sel](std::size_t n) { return std::string(enum_name(sel->pick(kBucket, n))); };
      b.predicts = [sel](std::size_t n) { return sel->predicted_us(kBucket, n); };
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace tt
