// `teetrain bench allreduce|step`: the CLI's own benchmarks (targets live here and in
// tests/bench, never in timed tests). Every report prints the machine and settings it ran with.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench/allreduce_bench.h"
#include "bench/allreduce_run.h"
#include "bench/bench_paths.h"
#include "bench/sealed_bench.h"
#include "comm/secure/sealed_channel.h"
#include "comm/secure/secure_session.h"
#include "comm/transport/mpi_allreduce.h"
#include "comm/transport/mpi_transport.h"
#include "core/backend_factory.h"
#include "core/cpu/cpu_backend.h"
#include "core/rng.h"
#include "data/token_loader.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/input/mlm_masking.h"
#include "engine/keys/tee_session.h"
#include "engine/optimizer.h"
#include "engine/run/adversary_wire.h"
#include "engine/run/host_layout.h"
#include "engine/trainer.h"
#include "models/model_registry.h"
#include "platform/platform.h"
#include "tee/crypto/aead.h"
#include "tools/cli/bench_common.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/tee_options.h"
#include "tools/cli/validators.h"

namespace tt {
// bench step's --stem spellings (cifar: the 3x3/1 stem without max-pool, ResnetStem::Small).
template <>
struct EnumNames<ResnetStem> {
  static constexpr std::pair<const char*, ResnetStem> all[] = {
      {"auto", ResnetStem::Auto}, {"imagenet", ResnetStem::ImageNet}, {"cifar", ResnetStem::Small}};
};
}  // namespace tt

namespace tt::cli {
namespace {

// One line naming the machine a report ran on: bandwidth and step times mean little without the core
// count, the CPU and how busy the machine was (a loaded shared machine can halve them).
std::string machine_line() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) cpu = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  std::array<double, 3> load{-1, -1, -1};
  if (getloadavg(load.data(), 3) != 3) load = {-1, -1, -1};
  // How idle OpenMP workers wait (set in main.cpp unless the user set it): it moves a step's time by
  // a third on 2 threads, so a report names it.
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "unset";
  };
  std::array<char, 640> buf{};
  std::snprintf(buf.data(), buf.size(),
                "%u hardware threads, %s, load average %.2f %.2f %.2f, OpenMP waits OMP_WAIT_POLICY=%s "
                "GOMP_SPINCOUNT=%s",
                std::thread::hardware_concurrency(), cpu.c_str(), load[0], load[1], load[2],
                env("OMP_WAIT_POLICY"), env("GOMP_SPINCOUNT"));
  return buf.data();
}

void print_allreduce_header(AllreduceRun& run) {
  const AllreduceBenchOptions& o = run.options();
  const TeeSwitches& ts = run.switches();
  const bench::BenchOptions& bo = run.bench_options();
  const SegmentPick& segment = run.segment();
  std::string modes;
  for (const bench::BenchMode* m : o.modes) modes += std::string(modes.empty() ? "" : ",") + m->name;
  std::printf(
      "# teetrain bench allreduce: %d ranks, modes %s, sizes %zu..%zu B (x%zu), warmup %d, iters %d\n",
      run.size(), modes.c_str(), o.min_bytes, o.max_bytes, o.factor, o.warmup, o.iters);
  if (ts.on) {
    std::printf(
        "# tee %s: cipher %s, pipeline %s (segment %s), all-gather %s, crypto threads %d, rekey %llu MiB\n",
        name(o.tee.settings.mode), enum_name(ts.cipher), ts.pipeline ? "on" : "off",
        ts.pipeline ? segment.why.c_str() : "whole chunk", comm::all_gather_mode_name(bo.ring.all_gather),
        ts.crypto_threads, static_cast<unsigned long long>(o.tee.settings.rekey_mb));
    std::printf("# attestation %s\n", attestation_banner(*run.attest(), run.size()).c_str());
  } else {
    std::printf("# tee off: plaintext, ring segment %s\n", segment.why.c_str());
  }
  std::printf("# machine: %s\n", machine_line().c_str());
  const bool plain = runs_mode(o, "plain");
  std::printf("# buffers (--buffer): ours %s, MPI_Allreduce's private on huge pages\n",
              *o.buffer == comm::BufferMemory::Shared
                  ? "shared (host peers read and add from them in place where the host allows it)"
                  : "private on huge pages");
  std::printf("# ring waits: %s (--comm-wait); %s, iterations interleaved\n", enum_name(*o.comm_wait),
              plain ? "plain = our ring in plaintext; vs_plain = its time / this one's"
                    : "vs_mpi = MPI_Allreduce's time / this one's");
  std::printf(
      "# busbw = algbw * 2(P-1)/P (nccl-tests convention); time = max over ranks, median over "
      "iterations\n");
  const CostModelSource m = run.cost_source();
  std::printf("# model_us = the cost model's time for what ran (auto: its cheapest per size): %s (%s)\n",
              comm::describe(m.model).c_str(), m.source.c_str());
  std::printf("%s\n", bench::format_bench_header(plain ? "plain" : "mpi").c_str());
}

void write_allreduce_json(const AllreduceRun& run, const std::vector<bench::BenchRecord>& records) {
  const AllreduceBenchOptions& o = run.options();
  const std::size_t segment_bytes = run.bench_options().ring.segment_bytes;
  const nlohmann::json tee = tee_json(o.tee);
  // The link as the ranks agreed on it (its eager limit read through MPI_T) and the model that
  // priced predicted_us: what tools/validate_emulator.py's part (c) compares.
  const nlohmann::json link = {{"name", run.link().name},
                               {"eager_limit", run.link().eager_limit},
                               {"rendezvous_turns", run.link().rendezvous_turns()}};
  const nlohmann::json model = cost_model_json(run.cost_source().model);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : records) {
    arr.push_back({{"mode", r.mode},
                   {"tee", name(o.tee.settings.mode)},
                   {"tee_config", tee},
                   {"ranks", r.ranks},
                   {"bytes", r.bytes},
                   {"iters", r.iters},
                   {"time_us_median", r.time_us_median},
                   {"time_us_min", r.time_us_min},
                   {"time_us_max", r.time_us_max},
                   {"time_us_p10", r.time_us_p10},
                   {"time_us_p90", r.time_us_p90},
                   {"algbw_gbps", r.algbw_gbps},
                   {"busbw_gbps", r.busbw_gbps},
                   {"speedup_vs_mpi", r.speedup_vs_mpi},
                   {"speedup_vs_plain", r.speedup_vs_plain},
                   {"aead_us", r.aead_us},
                   {"picked", r.picked.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.picked)},
                   {"predicted_us", r.predicted_us},
                   {"comm_wait", enum_name(*o.comm_wait)},
                   {"host_transport", enum_name(o.host_transport)},
                   {"buffer", enum_name(r.buffer)},
                   {"segment_bytes", segment_bytes},  // our rows' segments (0: whole chunks)
                   {"link", link},
                   {"cost_model", model},
                   {"correct", r.correct}});
  }
  write_json_file("--json", o.json, arr);
}

// --calibrate: the cost model fitted to this run's ring, rd and rhd times, merged into the file under
// this TEE mode, and how well it fits. The transport's eager limit is the one MPI reports for the
// ranks' link, as the rows use it; its rendezvous cost is fitted, its turns (TCP) counted.
void write_calibration(const AllreduceRun& run, const std::vector<bench::BenchRecord>& records) {
  const AllreduceBenchOptions& o = run.options();
  const bench::BenchOptions& bo = run.bench_options();
  const auto samples = bench::cost_samples(records);
  const comm::CostModel now = run.cost_source().model;
  const comm::CostFit fit =
      comm::fit_cost_model(samples, bo.ring.segment_bytes, now.eager_bytes, now.rendezvous_turns);
  save_cost_model(o.calibrate, o.tee.settings.mode, fit,
                  {{"ranks", run.size()},
                   {"min_bytes", o.min_bytes},
                   {"max_bytes", o.max_bytes},
                   {"segment_kb", o.segment_kb},
                   {"segment_bytes", bo.ring.segment_bytes},
                   {"buffer", enum_name(bo.buffer)},  // shared: peers' adds in place, a lower reduce cost
                   {"samples", samples.size()},
                   {"machine", machine_line()}});
  std::printf("# calibration (tee %s) written to %s: %s; mean |error| %.0f%% over %zu timings\n",
              name(o.tee.settings.mode), o.calibrate.c_str(), comm::describe(fit.model).c_str(),
              100 * fit.mean_abs_rel_error, samples.size());
}

// The run is the engine's (bench/allreduce_run.h); this prints its header, rows and reports.
void run_allreduce(AllreduceBenchOptions options, RunServices services) {
  AllreduceRun run(std::move(options), services);
  const AllreduceBenchOptions& o = run.options();
  const bench::BenchOptions& bo = run.bench_options();
  const bool root = run.rank() == 0;
  if (const std::string banner = run.adversary_banner(); root && !banner.empty())
    std::printf("# %s\n", banner.c_str());
  if (root) {
    print_allreduce_header(run);
    std::printf("# host transport: %s\n", run.host_transport().c_str());
  }
  auto records =
      bench::run_allreduce_bench(run.transport(), run.rows(), bo, [&](const bench::BenchRecord& r) {
        if (root) std::printf("%s\n", bench::format_bench_row(r).c_str());
        std::fflush(stdout);
      });
  // Sealed beside plain (never with --adversary: the run refuses it): also what the crypto alone allows,
  // measured now on the same cores.
  if (runs_mode(o, "plain")) {
    // The ring's message size: a segment, or (whole chunks) a few MiB.
    const std::size_t message = bo.ring.segment_bytes > 0 ? bo.ring.segment_bytes : std::size_t{4} << 20;
    const TeeSwitches& ts = run.switches();
    const bench::AeadRates rates = bench::measure_aead_rates(run.transport(), ts.cipher, message,
                                                             static_cast<std::size_t>(ts.crypto_threads));
    bench::add_aead_bounds(records, rates, bo.ring.all_gather);
    if (root) std::printf("%s", bench::format_sealed_summary(records, rates).c_str());
  }
  const std::string adversary_view = run.adversary_report();
  if (root && !adversary_view.empty()) std::printf("%s", adversary_view.c_str());
  if (root && !o.json.empty()) write_allreduce_json(run, records);
  if (root && !o.calibrate.empty()) write_calibration(run, records);
  // A wrong sum is a failed run, not a data point: scripts and CI must see it in the exit code.
  for (const auto& r : records) {
    if (!r.correct) {
      throw RunError("bench allreduce: " + r.mode + " gave a wrong sum at " + std::to_string(r.bytes) +
                     " bytes (tee " + name(o.tee.settings.mode) + ")");
    }
  }
}

struct StepBenchOptions {
  ModelOptions model{"gpt2"};
  int batch = 4;
  int seq = 64;  // language models only
  int threads = 2;
  DeviceKind device = DeviceKind::Cpu;
  bool tf32 = false;
  int steps = 5;
  int warmup = 1;
  std::string json;
};

long peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

// sgemm GFLOP/s of the backend at one (N, IC) @ (IC, OC) shape, as a ceiling.
double sgemm_gflops(Backend& be, int N, int IC, int OC) {
  DeviceBuffer a(be, sizeof(float) * static_cast<std::size_t>(N) * IC),
      w(be, sizeof(float) * static_cast<std::size_t>(OC) * IC),
      out(be, sizeof(float) * static_cast<std::size_t>(N) * OC);
  be.matmul_forward(out.as<float>(), a.as<float>(), w.as<float>(), nullptr, N, IC, OC);
  be.synchronize();
  const int reps = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i)
    be.matmul_forward(out.as<float>(), a.as<float>(), w.as<float>(), nullptr, N, IC, OC);
  be.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * N * IC * OC * reps / s * 1e-9;
}

// A random batch of the model's input: tokens and next-token targets (B, T) for a language model,
// normal images (B, C, H, W) and labels (B) for an image classifier.
Batch bench_batch(const StepBenchOptions& o, const nlohmann::json& mc, bool image) {
  Batch b;
  b.B = o.batch;
  Rng rng(7);
  if (image) {
    const auto per_image = mc["image_channels"].get<std::size_t>() * mc["image_size"].get<std::size_t>() *
                           mc["image_size"].get<std::size_t>();
    b.images.resize(static_cast<std::size_t>(o.batch) * per_image);
    for (float& x : b.images) x = static_cast<float>(rng.normal());
    for (int i = 0; i < o.batch; ++i)
      b.targets.push_back(static_cast<int32_t>(rng.below(mc["num_classes"].get<uint64_t>())));
    return b;
  }
  const auto vocab = mc["vocab"].get<uint64_t>();
  b.T = o.seq;
  for (int i = 0; i < o.batch * o.seq; ++i) {
    b.tokens.push_back(static_cast<int32_t>(rng.below(vocab)));
    b.targets.push_back(static_cast<int32_t>(rng.below(vocab)));
  }
  // A masked LM predicts 15% of the positions, as in training (the step's work is the same either way).
  if (is_masked_lm(o.model))
    MlmMasking{7, static_cast<int>(vocab) - 1, static_cast<int>(vocab) - 1}.apply(b, 0);
  return b;
}

struct StepTimes {
  std::vector<double> step, fwd, bwd, upd;  // seconds per timed step
};

// The steps as `teetrain train` runs them (engine/trainer.h: zero grad, forward, backward, gradient
// norm, update), on one rank with no reducer, `batch` every step; each timed step's forward, backward
// and optimizer phases read from the trainer's profiler after it.
StepTimes time_steps(const StepBenchOptions& o, Backend& be, Model& model, Optimizer& opt,
                     const OptimizerConfig& oc, const Batch& batch) {
  TrainConfig tc;
  tc.schedule.steps = o.warmup + o.steps;
  tc.schedule.batch = o.batch;
  tc.schedule.seq = o.seq;
  tc.schedule.lr = 1e-4f;
  tc.schedule.warmup = 0;
  tc.schedule.schedule = ScheduleKind::Constant;
  tc.schedule.grad_clip = 0;  // the norm is still computed, as in training; the update is never scaled
  tc.schedule.optimizer = oc;
  tc.schedule.val_batches = 0;
  tc.progress = false;
  tc.digest_params = false;
  Profiler profiler;
  StepTimes t;
  std::array<double, 3> before{};
  tc.after_step = [&](long step) {
    const std::array<double, 3> now{profiler.seconds(Phase::Forward), profiler.seconds(Phase::Backward),
                                    profiler.seconds(Phase::Optimizer)};
    if (step > o.warmup) {
      t.fwd.push_back(now[0] - before[0]);
      t.bwd.push_back(now[1] - before[1]);
      t.upd.push_back(now[2] - before[2]);
      t.step.push_back(t.fwd.back() + t.bwd.back() + t.upd.back());
    }
    before = now;
  };
  Trainer trainer(be, model, opt, profiler, RankInfo{}, nullptr, std::move(tc),
                  [&batch](Batch& out, uint64_t, int) { out = batch; }, {});
  trainer.run();
  return t;
}

void write_step_json(const StepBenchOptions& o, const nlohmann::json& j) {
  write_json_file("--json", o.json, j);
}

void run_step(const StepBenchOptions& o) {
  const bool image = is_image_model(o.model);
  if (!image && o.model.stem != ResnetStem::Auto)
    throw InputError("--stem applies to image models (resnet*) only");
  std::unique_ptr<Backend> be = bench_backend(o.device, o.threads, o.tf32);
  const nlohmann::json mc = model_config_json(o.model);
  std::unique_ptr<Model> model = make_model(*be, o.model);
  model->init_params(1);
  // Image models train with SGD + momentum, as their PyTorch peer (tools/bench/compare_resnet18_torch.py).
  OptimizerConfig oc;
  if (image) oc.kind = OptimizerKind::Sgd;
  std::unique_ptr<Optimizer> opt = make_optimizer(*be, oc, model->num_params());
  const StepTimes t = time_steps(o, *be, *model, *opt, oc, bench_batch(o, mc, image));
  const int seq = image ? 1 : o.seq;
  const StepFlops f = model->flops(o.batch, seq);
  const double step = median_of(t.step);
  const double gflops = (f.forward + f.backward) / step * 1e-9;
  // The ceiling: sgemm at the model's MLP shape (GPT-2), or a large square one (images: a conv is a
  // gemm of the same order once im2col'd or blocked).
  const int C = image ? 1024 : mc["n_embd"].get<int>();
  const int N = image ? 1024 : o.batch * o.seq;
  const double peak = sgemm_gflops(*be, N, C, image ? C : 4 * C);
  const double rate = static_cast<double>(o.batch) * seq / step;
  const char* unit = image ? "images/s" : "tokens/s";
  const std::string shape = image ? mc["shape"].get<std::string>() : "seq " + std::to_string(o.seq);
  std::printf("# teetrain bench step: %s (%zu params, %s), batch %d, %d threads, %d timed steps (median)\n",
              o.model.name.c_str(), model->num_params(), shape.c_str(), o.batch, o.threads, o.steps);
  std::printf("# backend: %s\n", be->describe().c_str());
  std::printf("# machine: %s\n", machine_line().c_str());
  std::printf(
      "step %.3f s (forward %.3f, backward %.3f, optimizer %.3f) | %.1f %s | %.1f GFLOP/step | %.1f GFLOP/s "
      "| "
      "sgemm (%dx%dx%d) %.1f GFLOP/s -> %.0f%% of sgemm | peak RSS %ld MiB\n",
      step, median_of(t.fwd), median_of(t.bwd), median_of(t.upd), rate, unit, (f.forward + f.backward) * 1e-9,
      gflops, N, C, image ? C : 4 * C, peak, 100.0 * gflops / peak, peak_rss_mib());
  if (o.json.empty()) return;
  nlohmann::json j{{"model", mc},
                   {"batch", o.batch},
                   {"threads", o.threads},
                   {"device", o.device},
                   {"tf32", o.tf32},
                   {"step_s", step},
                   {"forward_s", median_of(t.fwd)},
                   {"backward_s", median_of(t.bwd)},
                   {"optimizer_s", median_of(t.upd)},
                   {"optimizer", enum_name(oc.kind)},
                   {image ? "images_per_s" : "tokens_per_s", rate},
                   {"gflops", gflops},
                   {"sgemm_gflops", peak},
                   {"peak_rss_mib", peak_rss_mib()},
                   {"backend", be->describe()}};
  if (!image) j["seq"] = o.seq;
  write_step_json(o, j);
}

struct CryptoBenchOptions {
  std::vector<std::string> ciphers = {"aes-256-gcm", "aes-128-gcm", "chacha20-poly1305"};
  std::vector<std::size_t> threads = {1, 2};
  std::size_t min_bytes = 16;
  std::size_t max_bytes = std::size_t{64} << 20;
  double min_seconds = 0.2;
  std::string json;
};

void run_crypto(const CryptoBenchOptions& o) {
  std::vector<std::size_t> sizes;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= 4) sizes.push_back(b);
  std::printf(
      "# teetrain bench crypto: seal/open through the sealed channel (context reuse, deterministic nonces),\n"
      "# plaintext GB/s (1e9 B/s), wall time, >= %.2f s per point. Compare: openssl speed -evp aes-256-gcm\n",
      o.min_seconds);
  nlohmann::json arr = nlohmann::json::array();
  for (const std::string& name : o.ciphers) {
    const auto c = tee::parse_cipher(name);
    if (!c) throw InputError("--ciphers: unknown cipher '" + name + "'");
    for (std::size_t t : o.threads) {
      const auto recs = bench::run_crypto_bench(*c, sizes, t, o.min_seconds);
      std::printf("%s\n", bench::format_crypto_bench(recs).c_str());
      std::fflush(stdout);
      for (const auto& r : recs) {
        arr.push_back({{"cipher", r.cipher},
                       {"mode", r.mode},
                       {"bytes", r.bytes},
                       {"threads", r.threads},
                       {"messages", r.messages},
                       {"seconds", r.seconds},
                       {"gbps", r.gbps}});
      }
    }
  }
  if (!o.json.empty()) write_json_file("--json", o.json, arr);
}

void register_bench_allreduce(CLI::App* bench, RunServices services) {
  auto ar = std::make_shared<AllreduceBenchOptions>();
  auto* a =
      bench->add_subcommand("allreduce", "All-reduce bus bandwidth, nccl-tests style (run under mpirun)");
  add_bytes_option(a, "--min-bytes", ar->min_bytes, "Smallest message");
  add_bytes_option(a, "--max-bytes", ar->max_bytes, "Largest message");
  a->add_option("--factor", ar->factor, "Size step factor")->check(CLI::Range(2, 16))->capture_default_str();
  a->add_option("--warmup", ar->warmup, "Warm-up iterations per size")
      ->check(non_negative())
      ->capture_default_str();
  a->add_option("--iters", ar->iters, "Timed iterations per size")->check(positive())->capture_default_str();
  a->add_option_function<std::vector<std::string>>(
       "--modes",
       [ar](const std::vector<std::string>& names) {
         ar->modes.clear();
         for (const auto& n : names) ar->modes.push_back(bench::find_bench_mode(n));
       },
       "Algorithms: ours (sealed with --tee cc|fast): ring, rd (recursive doubling), rhd (recursive "
       "halving-doubling), auto (the cost model's pick per size); mpi (MPI_Allreduce, plaintext only), plain "
       "(our ring in plaintext beside sealed ones). Default ring,rd,rhd,auto,mpi; with --tee cc|fast "
       "ring,rd,rhd,auto,plain")
      ->check(CLI::IsMember({"ring", "rd", "rhd", "auto", "mpi", "plain"}))
      ->delimiter(',')
      ->default_str("ring,rd,rhd,auto,mpi");
  a->add_option_function<std::string>(
       "--allreduce-algo", [ar](const std::string& n) { ar->algo = bench::find_bench_mode(n); },
       "Run only this one of ours (ring, rd, rhd or auto) beside MPI_Allreduce (or, with --tee, the "
       "plain ring): train's --allreduce-algo")
      ->check(CLI::IsMember({"auto", "ring", "rd", "rhd"}))
      ->default_str("auto");
  a->add_option("--allreduce-cost", ar->cost,
                "auto's cost model: a calibration FILE (its model for this --tee mode); default: train's "
                "defaults for the mode");
  a->add_option(
      "--calibrate", ar->calibrate,
      "Fit the cost model to this run's ring, rd and rhd times and write it to FILE under this --tee "
      "mode (other modes' models in the file are kept); train --allreduce-cost FILE uses it");
  a->add_option("--segment-kb", ar->segment_kb,
                "Ring segment size in KiB; 0 = automatic: 1 MiB, or under Open MPI's TCP eager limit when "
                "ranks span hosts")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(a, "--comm-wait", ar->comm_wait,
                  "How the ring waits for a message: busy polls like MPI_Allreduce (a core per rank); "
                  "adaptive yields, then naps (train's default). Default: busy, adaptive when ranks "
                  "outnumber the host's cores or Open MPI was told to yield (--mca mpi_yield_when_idle 1), "
                  "as Open MPI itself then yields");
  add_host_transport_option(a, ar->host_transport);
  add_enum_option(a, "--buffer", ar->buffer,
                  "The memory our algorithms run on: shared, a buffer that ranks on this host map and read "
                  "(and add from) in place, where the host lets them; private, ordinary memory on huge "
                  "pages, as MPI_Allreduce's always is. Default: shared with --tee off, private with a TEE");
  auto* tg = a->add_option_group("TEE mode (sealed ring, as `teetrain train --tee`)");
  TeeSettings& t = ar->tee.settings;
  add_enum_option(tg, "--tee", t.mode,
                  "off: plaintext; cc: whole-chunk seal, per-hop re-seal; fast: pipelined segments, "
                  "forward-ciphertext all-gather, crypto threads");
  add_enum_option(tg, "--cipher", t.cipher, "AEAD cipher");
  tg->add_option("--rekey-mb", t.rekey_mb, "Rotate each key after this many MiB")
      ->check(positive())
      ->capture_default_str();
  add_enum_option(tg, "--tee-pipeline", t.pipeline,
                  "Cut ring chunks into --segment-kb segments (auto: on in fast)");
  add_enum_option(tg, "--tee-forward-ag", t.forward_ag,
                  "All-gather forwards the owner's ciphertext (auto: on in fast)");
  tg->add_option("--crypto-threads", t.crypto_threads,
                 "Threads sealing/opening segments (0 = mode default: cc 1, fast 2)")
      ->check(non_negative())
      ->capture_default_str();
  add_trust_options(tg, ar->tee.trust);
  add_adversary_option(tg, ar->tee.adversary);
  a->add_option("--json", ar->json, "Write the records as a JSON list to FILE");
  auto* modes_opt = a->get_option("--modes");
  a->callback([ar, modes_opt, services] {
    AllreduceBenchOptions o = *ar;
    o.modes_given = modes_opt->count() > 0;
    run_allreduce(std::move(o), services);
  });
}

void register_bench_step(CLI::App* bench) {
  auto st = std::make_shared<StepBenchOptions>();
  auto* s = bench->add_subcommand(
      "step",
      "Time one training step (forward, backward, optimizer: AdamW, SGD for image models) and report "
      "tokens/s or images/s and GFLOP/s next to sgemm's");
  add_model_options(s, st->model);
  s->add_option("--batch", st->batch, "Batch")->check(positive())->capture_default_str();
  s->add_option("--seq", st->seq, "Sequence length (language models)")
      ->check(positive())
      ->capture_default_str();
  s->add_option("--image-size", st->model.image_size,
                "Image models: H = W of the input (default the preset's)")
      ->check(positive());
  s->add_option("--channels", st->model.image_channels, "Image models: input channels (default the preset's)")
      ->check(positive());
  s->add_option("--classes", st->model.num_classes, "Image models: classes (default the preset's)")
      ->check(positive());
  add_enum_option(s, "--stem", st->model.stem,
                  "Image models: imagenet (7x7/2 conv + max-pool, torchvision's), cifar (3x3/1 conv, no "
                  "pool), auto (cifar for images of 64 px and less)");
  s->add_option("--threads", st->threads, "Threads")->check(positive())->capture_default_str();
  add_enum_option(s, "--device", st->device, "Where the model runs");
  s->add_flag("--tf32", st->tf32, "CUDA: TF32 tensor-core matmuls (default exact FP32)");
  s->add_option("--steps", st->steps, "Timed steps")->check(positive())->capture_default_str();
  s->add_option("--warmup", st->warmup, "Untimed steps first")->check(non_negative())->capture_default_str();
  s->add_option("--json", st->json, "Write the result as JSON to FILE");
  s->callback([st] { run_step(*st); });
}

void register_bench_crypto(CLI::App* bench) {
  auto cr = std::make_shared<CryptoBenchOptions>();
  auto* c = bench->add_subcommand("crypto", "Seal and open GB/s per cipher, message size and thread count");
  c->add_option("--ciphers", cr->ciphers, "Ciphers")->delimiter(',')->capture_default_str();
  c->add_option("--threads", cr->threads, "Crypto thread counts")->delimiter(',')->capture_default_str();
  add_bytes_option(c, "--min-bytes", cr->min_bytes, "Smallest message (sizes grow x4)");
  add_bytes_option(c, "--max-bytes", cr->max_bytes, "Largest message");
  c->add_option("--min-seconds", cr->min_seconds, "Time per point")->check(positive())->capture_default_str();
  c->add_option("--json", cr->json, "Write the records as a JSON list to FILE");
  c->callback([cr] { run_crypto(*cr); });
}

}  // namespace

void register_bench(CLI::App& app, RunServices services) {
  auto* bench = app.add_subcommand(
      "bench",
      "Benchmarks: allreduce (our ring vs MPI), step (one training step), crypto (seal/open GB/s), "
      "host-profile (this machine as an emulator platform), emulated-step (the emulator's step), conv (a "
      "model's convolutions layer by layer)");
  bench->require_subcommand(1);
  register_bench_allreduce(bench, services);
  register_bench_step(bench);
  register_bench_crypto(bench);
  register_bench_host_profile(bench);
  register_bench_emulated_step(bench);
  register_bench_conv(bench);
}

}  // namespace tt::cli
