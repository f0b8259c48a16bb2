// `teetrain bench allreduce`, assembled the way `train` assembles its links: the options resolved
// (TEE switches, rows, waits, buffers), the ranks' links (engine/run/rank_links.h: attested and sealed
// in TEE mode, the adversary on them), the link the ranks agree on, the segments it cuts, and one
// gradient path per row from train's table (bench_paths.h). The CLI parses the options into an
// AllreduceBenchOptions, builds an AllreduceRun and prints what it reports.
#pragma once
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/allreduce_bench.h"
#include "bench/bench_paths.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/gradients/segments.h"
#include "engine/run/rank_links.h"
#include "engine/run/run_services.h"
#include "engine/run/startup_watchdog.h"
#include "engine/run/train_options.h"
#include "platform/platform.h"

namespace tt {

struct AllreduceBenchOptions {
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t factor = 4;
  int warmup = 3;
  int iters = 10;
  std::vector<const bench::BenchMode*> modes = {bench::find_bench_mode("ring"), bench::find_bench_mode("rd"),
                                                bench::find_bench_mode("rhd"), bench::find_bench_mode("auto"),
                                                bench::find_bench_mode("mpi")};
  bool modes_given = false;                // --modes on the command line (else the default depends on --tee)
  const bench::BenchMode* algo = nullptr;  // --allreduce-algo: our rows are this one only
  std::string cost;                        // --allreduce-cost FILE: auto's model
  std::string calibrate;                   // --calibrate FILE: fit the model to this run, write it
  int segment_kb = 0;                      // 0: automatic (engine/gradients/segments.h)
  // Unset: poll as Open MPI's MPI_Allreduce does (busy, adaptive when ranks outnumber cores), a fair
  // race (engine/run/host_layout.h fair_wait_mode).
  std::optional<comm::WaitMode> comm_wait;
  comm::HostTransport host_transport = comm::HostTransport::Shm;
  std::optional<comm::BufferMemory> buffer;  // unset: shared in plaintext, private when sealed
  // The TEE flags that shape the ring's traffic, with train's names and defaults; ingress and
  // at-rest keys do not apply to a benchmark of the ring alone.
  TeeOptions tee;
  std::string json;
};

// Whether `name` is among the rows that run.
bool runs_mode(const AllreduceBenchOptions& o, std::string_view name);
// The canonical form of the bench's settings: every rank attests it (a rank started with other flags
// is refused before any key is agreed, as in train). nlohmann::json sorts keys, so dump() is canonical.
nlohmann::json allreduce_config_json(const AllreduceBenchOptions& o);

class AllreduceRun {
 public:
  // Collective. Resolves the options (throws InputError naming a conflict: a sealed mpi row, --modes
  // with --allreduce-algo, ...), sets up the links and, in TEE mode, attests and seals them. Its
  // services' watchdog, where given, bounds each of those stages (Note [Start-up watchdog],
  // engine/run/startup_watchdog.h) and stands down once the run is built; its notices are armed with
  // the session's key once it exists (Note [Sealed notices]).
  explicit AllreduceRun(AllreduceBenchOptions o, RunServices services = {});
  AllreduceRun(const AllreduceRun&) = delete;
  AllreduceRun& operator=(const AllreduceRun&) = delete;

  const AllreduceBenchOptions& options() const { return o_; }
  const TeeSwitches& switches() const { return ts_; }
  const LinkFacts& link() const { return link_; }
  const SegmentPick& segment() const { return segment_; }
  const bench::BenchOptions& bench_options() const { return bo_; }
  int rank() const { return links_->rank(); }
  int size() const { return links_->size(); }
  comm::Transport& transport() { return links_->transport(); }
  const std::optional<comm::AttestConfig>& attest() const { return links_->attest(); }
  std::string host_transport() const { return links_->host_transport_description(); }
  // The adversary's banner and report (empty without --adversary).
  std::string adversary_banner();
  std::string adversary_report();
  // auto's cost model as the rows build it (engine/gradients/gradient_paths.cpp: HostPath).
  CostModelSource cost_source() const;
  // One bench row per mode, in order, from train's table of gradient paths.
  std::vector<bench::BenchAlgo> rows();

 private:
  TeeSwitches ts_;  // before o_: the options are resolved against it
  AllreduceBenchOptions o_;
  std::optional<RankLinks> links_;  // built once the watchdog is in its stage
  LinkFacts link_;
  SegmentPick segment_;
  bench::BenchOptions bo_;
  std::unique_ptr<platform::Platform> cpu_;  // host buffers: the bench runs no model
  std::optional<BenchPaths> paths_;
};

}  // namespace tt
