// All-reduce benchmark in the style of nccl-tests (`teetrain bench allreduce`).
//
// For each message size (min..max, times step_factor) and each algorithm: one checked run on
// integer-valued floats (the sum is exact, so the check is equality) and `warmup` untimed runs; then
// `iters` rounds in which every algorithm runs once, each run preceded by a barrier (interleaved, so
// load on a shared machine hits every algorithm alike). An iteration's time is the slowest rank's; the
// record gives the median and spread over iterations and
//   algbw = bytes / time,   busbw = algbw * 2 (P-1) / P   (GB = 1e9 bytes, as nccl-tests)
// busbw is the per-link rate a ring needs, so it is comparable across P and with the link's bandwidth.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/ring_allreduce.h"
#include "comm/transport.h"
#include "engine/core/enum_names.h"
#include "engine/core/profiler.h"

namespace tt::comm {

// The algorithms `bench allreduce --modes` compares: our ring, and the MPI library's MPI_Allreduce.
enum class BenchAlgorithm { Ring, Mpi };

}  // namespace tt::comm

namespace tt {
template <>
struct EnumNames<comm::BenchAlgorithm> {
  static constexpr std::pair<const char*, comm::BenchAlgorithm> all[] = {{"ring", comm::BenchAlgorithm::Ring},
                                                                         {"mpi", comm::BenchAlgorithm::Mpi}};
};
}  // namespace tt

namespace tt::comm {

// One algorithm under test: an in-place float sum over all ranks.
struct BenchAlgo {
  std::string mode;  // "ring", "mpi", ...
  std::function<void(float* data, std::size_t count)> allreduce;
};

struct BenchOptions {
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t step_factor = 2;  // sizes grow by this factor (2 or 4)
  int warmup = 5;
  int iters = 20;
  bool check = true;
  std::vector<BenchAlgorithm> modes = {BenchAlgorithm::Ring, BenchAlgorithm::Mpi};  // the MPI_Comm overload
  RingOptions ring{};                                                               // ditto
};

struct BenchRecord {
  std::string mode;
  int ranks = 1;
  std::size_t bytes = 0;
  std::size_t count = 0;  // floats
  int iters = 0;
  double time_us_median = 0;
  double time_us_min = 0;
  double time_us_max = 0;
  double time_us_p10 = 0;
  double time_us_p90 = 0;
  double algbw_gbps = 0;  // from the median time
  double busbw_gbps = 0;
  bool correct = true;        // the checked run gave the exact sum on every rank
  double speedup_vs_mpi = 0;  // MPI_Allreduce's median time / this one's at the same size; 0: no mpi run
};

// Runs every algorithm at every size. `t` carries the barriers and the gathering of timings (outside
// the timed region). on_record, if given, sees each record as soon as it is measured (rank 0 prints).
std::vector<BenchRecord> run_allreduce_bench(Transport& t, const std::vector<BenchAlgo>& algos,
                                             const BenchOptions& opt,
                                             const std::function<void(const BenchRecord&)>& on_record = {});

// Convenience: opt.modes, our ring over t and channel, and MPI_Allreduce on comm.
std::vector<BenchRecord> run_allreduce_bench(Transport& t, MPI_Comm comm, const BenchOptions& opt,
                                             Channel* channel = nullptr, Profiler* profiler = nullptr,
                                             const std::function<void(const BenchRecord&)>& on_record = {});

std::string format_bench_header();
std::string format_bench_row(const BenchRecord& r);
std::string format_bench_table(const std::vector<BenchRecord>& records);  // header + rows

}  // namespace tt::comm
