// All-reduce benchmark in the style of nccl-tests (`teetrain bench allreduce`).
//
// For each message size (min..max, times step_factor) and each algorithm: one checked run on
// integer-valued floats (the sum is exact, so the check is equality) and `warmup` untimed runs; then
// `iters` rounds in which every algorithm runs once, each run preceded by a barrier and each round
// starting with the next algorithm (interleaved and rotated, so load on a shared machine and the
// position in a round hit every algorithm alike). An iteration's time is the slowest rank's; the
// record gives the median and spread over iterations and
//   algbw = bytes / time,   busbw = algbw * 2 (P-1) / P   (GB = 1e9 bytes, as nccl-tests)
// busbw is the per-link rate a ring needs, so it is comparable across P and with the link's bandwidth.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/allreduce/allreduce_cost.h"
#include "comm/allreduce/ring_aead.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/channel.h"
#include "comm/transport.h"
#include "comm/transport/shared_buffer.h"
#include "core/enum_names.h"
#include "core/profiler.h"
#include "engine/run_choices.h"
#include "tee/crypto/aead.h"

namespace tt::bench {

// What one row of `bench allreduce --modes` runs: ours (through the bench's channel: sealed in a TEE
// mode) — the ring, recursive doubling, recursive halving-doubling, and `auto`, the cost model's pick
// per size (allreduce_cost.h) — the MPI library's MPI_Allreduce, and our ring in plaintext beside a
// sealed one (what sealing costs, measured in the same run). Each is a provider and, for ours, an
// algorithm (none: auto), as `train --allreduce X --allreduce-algo Y` asks for one.
struct BenchMode {
  const char* name;  // --modes spelling, the rows' and the JSON's "mode"
  AllreduceProvider provider;
  std::optional<comm::ReduceAlgo> algo;  // ours: which (none: auto); ignored for MPI_Allreduce
  bool plain = false;                    // the plaintext reference beside sealed rows
  bool ours() const { return provider == AllreduceProvider::Ours && !plain; }
};
inline constexpr BenchMode kBenchModes[] = {
    {"ring", AllreduceProvider::Ours, comm::ReduceAlgo::Ring},
    {"rd", AllreduceProvider::Ours, comm::ReduceAlgo::Rd},
    {"rhd", AllreduceProvider::Ours, comm::ReduceAlgo::Rhd},
    {"auto", AllreduceProvider::Ours, std::nullopt},
    {"mpi", AllreduceProvider::Mpi, std::nullopt},
    {"plain", AllreduceProvider::Ours, comm::ReduceAlgo::Ring, /*plain=*/true},
};
// The mode of a spelling; null when none is spelled so.
const BenchMode* find_bench_mode(std::string_view name);

// The comm pieces a benchmark is made of.
using comm::aead_time_us;  // the sealed ring's AEAD bound (comm/allreduce/ring_aead.h)
using comm::AllGatherMode;
using comm::Channel;
using comm::CostModel;
using comm::CostSample;
using comm::ring_aead_bytes;
using comm::RingAeadBytes;
using comm::RingOptions;
using comm::Transport;

// One algorithm under test: an in-place float sum over all ranks. For our algorithms, `picks` names
// what runs for a count (auto: the cost model's pick) and `predicts` the cost model's time for it.
struct BenchAlgo {
  std::string mode;  // "ring", "mpi", ...
  std::function<void(float* data, std::size_t count)> allreduce;
  std::function<std::string(std::size_t count)> picks;
  std::function<double(std::size_t count)> predicts;
};

struct BenchOptions {
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t step_factor = 2;  // sizes grow by this factor (2 or 4)
  int warmup = 5;
  int iters = 20;
  bool check = true;
  RingOptions ring{};  // our algorithms' options (segments, all-gather mode): the AEAD bounds, --calibrate
  comm::BufferMemory buffer = comm::BufferMemory::Shared;  // ours (--buffer); MPI_Allreduce's is private
};

struct BenchRecord {
  std::string mode;
  comm::BufferMemory buffer = comm::BufferMemory::Private;  // what ours ran on: Shared where one was made
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
  bool correct = true;          // the checked run gave the exact sum on every rank
  double speedup_vs_mpi = 0;    // MPI_Allreduce's median time / this one's at the same size; 0: no mpi run
  double speedup_vs_plain = 0;  // the plaintext ring's median time / this one's; 0: no plain run
  double aead_us = 0;           // sealed ring: its AEAD work alone at the measured rates (add_aead_bounds)
  std::string picked;           // auto: the algorithm the cost model picked at this size; else empty
  double predicted_us = 0;      // ring, rd, rhd, auto: the cost model's time for this size
};

// The measured times of ring, rd and rhd, as samples for fit_cost_model (allreduce_cost.h).
std::vector<CostSample> cost_samples(const std::vector<BenchRecord>& records);

// Runs every algorithm at every size. `t` carries the barriers and the gathering of timings (outside
// the timed region). on_record, if given, sees each record as soon as it is measured (rank 0 prints).
std::vector<BenchRecord> run_allreduce_bench(Transport& t, const std::vector<BenchAlgo>& algos,
                                             const BenchOptions& opt,
                                             const std::function<void(const BenchRecord&)>& on_record = {});

// AEAD speed with every rank sealing and opening at once, as in a sealed ring: the slowest rank's
// plaintext GB/s, through SealedChannel with `threads` crypto threads and messages of `message_bytes`.
struct AeadRates {
  std::string cipher;
  double seal_gbps = 0;
  double open_gbps = 0;
  std::size_t message_bytes = 0;
  std::size_t threads = 1;
};
// Collective: every rank measures at the same time (after a barrier), for about `seconds`.
AeadRates measure_aead_rates(Transport& t, tee::Cipher cipher, std::size_t message_bytes, std::size_t threads,
                             double seconds = 0.3);
// Sets aead_us on the sealed ring's records ("ring"; a bench with a plain row is a sealed one).
void add_aead_bounds(std::vector<BenchRecord>& records, const AeadRates& rates, AllGatherMode all_gather);
// Per size, what sealing costs and what the crypto allows: sealed/plain busbw, the AEAD time alone,
// and the sealed/plain it predicts with crypto and wire in series (plain / (plain + aead): both need
// the same cores) and fully overlapped (min(1, plain / aead): a ring cannot hide more crypto than the
// wire's time). Comment lines (#).
std::string format_sealed_summary(const std::vector<BenchRecord>& records, const AeadRates& rates);

// The ratio column compares with `reference` ("mpi", or "plain" in a sealed bench): header vs_<reference>.
std::string format_bench_header(const std::string& reference = "mpi");
std::string format_bench_row(const BenchRecord& r);
std::string format_bench_table(const std::vector<BenchRecord>& records);  // header + rows

}  // namespace tt::bench
