#include "bench/allreduce_bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "base/error.h"
#include "base/host_memory.h"
#include "bench/sealed_bench.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/collectives.h"
#include "comm/transport/mpi_allreduce.h"
#include "comm/transport/shared_buffer.h"

namespace tt::bench {

using comm::Collectives;
using comm::ReduceAlgo;

namespace {

// Integer-valued test pattern, period 1024 in the index: small values, so any sum over ranks is exact.
float pattern(std::size_t i, int rank) {
  return static_cast<float>(((i % 1024) * 7 + static_cast<std::size_t>(rank) * 3) % 17);
}

void fill(float* data, std::size_t n, int rank) {
  for (std::size_t i = 0; i < n; ++i) data[i] = pattern(i, rank);
}

bool verify(const float* data, std::size_t n, int ranks) {
  std::array<float, 1024> expected{};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    for (int r = 0; r < ranks; ++r) expected[i] += pattern(i, r);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (data[i] != expected[i % 1024]) return false;
  }
  return true;
}

double percentile(const std::vector<double>& sorted, double q) {
  const auto idx = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(idx, sorted.size() - 1)];
}

// Per-iteration times gathered from every rank; an iteration takes as long as its slowest rank.
std::vector<double> slowest_rank_times(Collectives& coll, const std::vector<double>& mine, int ranks,
                                       std::uint64_t seq) {
  const auto all = coll.allgather(std::as_bytes(std::span(mine)), seq);  // (P, iters) doubles
  std::vector<double> out(mine.size(), 0.0);
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      double v = 0;
      std::memcpy(&v, all.data() + (static_cast<std::size_t>(r) * mine.size() + i) * sizeof(double),
                  sizeof(double));
      out[i] = std::max(out[i], v);
    }
  }
  return out;
}

}  // namespace

namespace {

// The buffers the algorithms run on, (max_count,) floats each, reused at every size. MPI_Allreduce's
// is private memory on huge pages, what it runs fastest on (Note [Huge pages for large host buffers],
// base/host_memory.h); ours is a SharedBuffer shared with the transport (Note [Shared buffers],
// comm/transport/shm_transport.h) unless the options or the host say no, then private like MPI's.
class BenchBuffers {
 public:
  BenchBuffers(Transport& t, std::size_t max_count, comm::BufferMemory ours) : mpi_(max_count) {
    std::string why;  // a host without memfds runs ours on private memory: the rows say so
    if (ours == comm::BufferMemory::Shared)
      shared_ = comm::SharedBuffer::create(max_count * sizeof(float), why);
    if (shared_) {
      share_.emplace(t, *shared_);
    } else {
      private_.resize(max_count);
    }
  }
  float* of(const BenchAlgo& a) {
    if (a.mode == "mpi") return mpi_.data();
    return shared_ ? shared_->floats().data() : private_.data();
  }
  comm::BufferMemory kind(const BenchAlgo& a) const {
    return a.mode != "mpi" && shared_ ? comm::BufferMemory::Shared : comm::BufferMemory::Private;
  }

 private:
  HostVector<float> mpi_;
  HostVector<float> private_;
  std::optional<comm::SharedBuffer> shared_;
  std::optional<comm::ScopedShare> share_;  // declared after the buffer: unshared before it goes
};

// One checked run on the test pattern: true when every rank got the exact sum.
bool check_algo(const Transport& t, Collectives& coll, const BenchAlgo& algo, float* buf, std::size_t count,
                std::uint64_t& seq) {
  fill(buf, count, t.rank());
  algo.allreduce(buf, count);
  const std::byte ok{static_cast<unsigned char>(verify(buf, count, t.size()) ? 1 : 0)};
  const auto oks = coll.allgather(std::span(&ok, 1), seq++);
  return std::all_of(oks.begin(), oks.end(), [](std::byte b) { return b == std::byte{1}; });
}

// The statistics of one algorithm's slowest-rank times (microseconds, sorted in place).
void summarise(BenchRecord& rec, std::vector<double>& times) {
  std::sort(times.begin(), times.end());
  rec.time_us_min = times.front();
  rec.time_us_max = times.back();
  rec.time_us_median = percentile(times, 0.5);
  rec.time_us_p10 = percentile(times, 0.1);
  rec.time_us_p90 = percentile(times, 0.9);
  rec.algbw_gbps = static_cast<double>(rec.bytes) / (rec.time_us_median * 1e3);  // bytes/us /1e3 = GB/s
  rec.busbw_gbps = rec.algbw_gbps * 2.0 * (rec.ranks - 1) / rec.ranks;
}

// Every algorithm at one size. The timed iterations are interleaved (A B, B A, A B, ...: each round
// starts with the next algorithm), each run after a barrier, so a burst of load on a shared machine
// and the position in the round hit every algorithm alike and the ratio stays fair.
std::vector<BenchRecord> bench_size(const Transport& t, Collectives& coll,
                                    const std::vector<BenchAlgo>& algos, const BenchOptions& opt,
                                    BenchBuffers& bufs, std::size_t count, std::uint64_t& seq) {
  const int p = t.size();
  std::vector<BenchRecord> recs(algos.size());
  std::vector<float*> buf(algos.size());  // each algorithm's buffer, looked up outside the timed runs
  for (std::size_t a = 0; a < algos.size(); ++a) {
    recs[a].mode = algos[a].mode;
    recs[a].ranks = p;
    recs[a].bytes = count * sizeof(float);
    recs[a].count = count;
    recs[a].iters = opt.iters;
    if (algos[a].picks) recs[a].picked = algos[a].picks(count);
    if (algos[a].predicts) recs[a].predicted_us = algos[a].predicts(count);
    recs[a].buffer = bufs.kind(algos[a]);
    buf[a] = bufs.of(algos[a]);
    if (opt.check) recs[a].correct = check_algo(t, coll, algos[a], buf[a], count, seq);
    // Timed runs reuse whatever the buffer holds: values only grow, and float adds take the same time.
    for (int i = 0; i < opt.warmup; ++i) algos[a].allreduce(buf[a], count);
  }
  std::vector<std::vector<double>> mine(algos.size(),
                                        std::vector<double>(static_cast<std::size_t>(opt.iters)));
  for (std::size_t i = 0; i < static_cast<std::size_t>(opt.iters); ++i) {
    // Each iteration starts with the next algorithm (A B C, B C A, C A B, ...): what runs right after
    // the barrier, or right after another algorithm, moved one row's time by 1.5x at 256 KiB on a
    // 2-core VM, and a fixed order gave that to the same row every time.
    for (std::size_t k = 0; k < algos.size(); ++k) {
      const std::size_t a = (k + i) % algos.size();
      coll.barrier(seq++);
      const auto t0 = std::chrono::steady_clock::now();
      algos[a].allreduce(buf[a], count);
      mine[a][i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  for (std::size_t a = 0; a < algos.size(); ++a) {
    auto times = slowest_rank_times(coll, mine[a], p, seq++);
    summarise(recs[a], times);
  }
  const auto find = [&](const char* mode) {
    return std::find_if(recs.begin(), recs.end(), [&](const BenchRecord& r) { return r.mode == mode; });
  };
  const auto mpi = find("mpi");
  const auto plain = find("plain");
  for (auto& r : recs) {
    if (mpi != recs.end()) r.speedup_vs_mpi = mpi->time_us_median / r.time_us_median;
    if (plain != recs.end()) r.speedup_vs_plain = plain->time_us_median / r.time_us_median;
  }
  return recs;
}

}  // namespace

std::vector<BenchRecord> run_allreduce_bench(Transport& t, const std::vector<BenchAlgo>& algos,
                                             const BenchOptions& opt,
                                             const std::function<void(const BenchRecord&)>& on_record) {
  if (opt.min_bytes < sizeof(float) || opt.max_bytes < opt.min_bytes || opt.step_factor < 2 ||
      opt.iters < 1 || opt.warmup < 0) {
    throw InputError("bench allreduce: need 4 <= min_bytes <= max_bytes, step factor >= 2, iters >= 1");
  }
  Collectives coll(t);  // plaintext control traffic, outside the timed region
  BenchBuffers bufs(t, opt.max_bytes / sizeof(float), opt.buffer);
  std::vector<BenchRecord> records;
  std::uint64_t seq = 0;
  for (std::size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= opt.step_factor) {
    for (auto& rec : bench_size(t, coll, algos, opt, bufs, bytes / sizeof(float), seq)) {
      if (on_record) on_record(rec);
      records.push_back(std::move(rec));
    }
    if (bytes > opt.max_bytes / opt.step_factor) break;  // the next step would pass max_bytes (or overflow)
  }
  return records;
}

const BenchMode* find_bench_mode(std::string_view name) {
  for (const BenchMode& m : kBenchModes) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::vector<CostSample> cost_samples(const std::vector<BenchRecord>& records) {
  std::vector<CostSample> out;
  for (const auto& r : records) {
    const auto algo = parse_enum<ReduceAlgo>(r.mode);  // ring, rd, rhd; not auto (it repeats one of them)
    if (algo && r.correct && r.time_us_median > 0) out.push_back({*algo, r.ranks, r.count, r.time_us_median});
  }
  return out;
}

AeadRates measure_aead_rates(Transport& t, tee::Cipher cipher, std::size_t message_bytes, std::size_t threads,
                             double seconds) {
  Collectives coll(t);
  coll.barrier(0);
  const auto recs = run_crypto_bench(cipher, {message_bytes}, threads, seconds);  // seal, then open
  const std::array<double, 2> mine{recs.at(0).gbps, recs.at(1).gbps};
  const auto all = coll.allgather(std::as_bytes(std::span(mine)), 1);  // (P, 2) doubles
  AeadRates rates{.cipher = std::string(tee::cipher_name(cipher)),
                  .seal_gbps = mine[0],
                  .open_gbps = mine[1],
                  .message_bytes = message_bytes,
                  .threads = threads};
  for (std::size_t r = 0; r < static_cast<std::size_t>(t.size()); ++r) {
    std::array<double, 2> theirs{};
    std::memcpy(theirs.data(), all.data() + r * sizeof theirs, sizeof theirs);
    rates.seal_gbps = std::min(rates.seal_gbps, theirs[0]);
    rates.open_gbps = std::min(rates.open_gbps, theirs[1]);
  }
  return rates;
}

void add_aead_bounds(std::vector<BenchRecord>& records, const AeadRates& rates, AllGatherMode all_gather) {
  for (auto& r : records) {
    if (r.mode == "ring")
      r.aead_us =
          aead_time_us(ring_aead_bytes(r.count, r.ranks, all_gather), rates.seal_gbps, rates.open_gbps);
  }
}

std::string format_sealed_summary(const std::vector<BenchRecord>& records, const AeadRates& rates) {
  std::array<char, 256> line{};
  std::snprintf(line.data(), line.size(),
                "# what sealing costs: %s alone, every rank at once (%zu-byte messages, %zu crypto thread%s "
                "per rank): seal %.2f, open %.2f GB/s per rank\n",
                rates.cipher.c_str(), rates.message_bytes, rates.threads, rates.threads == 1 ? "" : "s",
                rates.seal_gbps, rates.open_gbps);
  std::string out = line.data();
  out +=
      "# aead_us: that crypto alone per all-reduce. What it allows of sealed/plain: "
      "serial = plain / (plain + aead), crypto and wire one after the other (they share the cores); "
      "overlapped = min(1, plain / aead), crypto fully hidden behind the wire (it needs cores or a NIC of "
      "its own)\n";
  std::snprintf(line.data(), line.size(), "# %12s %12s %12s %10s %10s\n", "bytes", "sealed/plain", "aead_us",
                "serial", "overlapped");
  out += line.data();
  for (const auto& r : records) {
    if (r.mode != "ring" || r.aead_us <= 0 || r.speedup_vs_plain <= 0) continue;
    const double plain_us = r.speedup_vs_plain * r.time_us_median;
    std::snprintf(line.data(), line.size(), "# %12zu %11.2fx %12.1f %9.2fx %9.2fx\n", r.bytes,
                  r.speedup_vs_plain, r.aead_us, plain_us / (plain_us + r.aead_us),
                  std::min(1.0, plain_us / r.aead_us));
    out += line.data();
  }
  return out;
}

std::string format_bench_header(const std::string& reference) {
  const std::string vs = "vs_" + reference;
  std::array<char, 256> line{};
  std::snprintf(line.data(), line.size(), "%-9s %5s %12s %11s %12s %10s %10s %11s %11s %6s %5s %10s", "mode",
                "ranks", "bytes", "count", "time_us(med)", "min", "max", "algbw(GB/s)", "busbw(GB/s)",
                vs.c_str(), "check", "model_us");
  return line.data();
}

std::string format_bench_row(const BenchRecord& r) {
  std::array<char, 256> line{};
  std::array<char, 16> vs{};
  const double speedup = r.speedup_vs_mpi > 0 ? r.speedup_vs_mpi : r.speedup_vs_plain;
  if (speedup > 0) {
    std::snprintf(vs.data(), vs.size(), "%.2fx", speedup);
  } else {
    std::snprintf(vs.data(), vs.size(), "-");
  }
  // auto names its pick ("auto:rd"); model_us is the cost model's time for what ran.
  const std::string mode = r.mode == "auto" && !r.picked.empty() ? r.mode + ":" + r.picked : r.mode;
  std::array<char, 16> model{};
  if (r.predicted_us > 0) {
    std::snprintf(model.data(), model.size(), "%.1f", r.predicted_us);
  } else {
    std::snprintf(model.data(), model.size(), "-");
  }
  std::snprintf(line.data(), line.size(),
                "%-9s %5d %12zu %11zu %12.1f %10.1f %10.1f %11.3f %11.3f %6s %5s %10s", mode.c_str(), r.ranks,
                r.bytes, r.count, r.time_us_median, r.time_us_min, r.time_us_max, r.algbw_gbps, r.busbw_gbps,
                vs.data(), r.correct ? "ok" : "FAIL", model.data());
  return line.data();
}

std::string format_bench_table(const std::vector<BenchRecord>& records) {
  std::string out = format_bench_header() + "\n";
  for (const auto& r : records) out += format_bench_row(r) + "\n";
  return out;
}

}  // namespace tt::bench
