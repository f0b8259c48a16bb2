// `teetrain bench host-profile`: this machine as a platform the emulator can run on. It times the CPU
// backend's own ops at a transformer's shapes (matmuls, element-wise, AdamW, copies, per-op overhead)
// and AES-256-GCM, and writes them as a platform profile (engine/run/platform_profile.h) that
// `teetrain train --compute emulate --gpu FILE.json` reads. Nothing in it is fitted to a training
// step: each rate is one op kind's, measured by itself (the matmuls in a step's order over the model's
// layers, AdamW in the cache state a backward leaves).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/sealed_bench.h"
#include "core/backend_factory.h"
#include "core/buffer.h"
#include "core/emulated/emulated_backend.h"
#include "engine/optimizer.h"
#include "engine/run/platform_profile.h"
#include "models/model_registry.h"
#include "tee/crypto/aead.h"
#include "tools/cli/bench_common.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/train_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct HostProfileOptions {
  ModelOptions model;
  int batch = 1;
  int seq = 64;
  int threads = 1;
  int reps = 20;
  std::string out;
};

// Under `mpirun -np P`, the P ranks measure in lockstep: a barrier before each timed repetition, so
// that they contend for memory and caches as the ranks of a training step do, each running the same
// op at the same moment (AdamW at P = 2 ran 1.8x slower in lockstep than alone, and 1.3x slower
// beside an unsynchronised second process). Alone, it does nothing.
struct World {
  int rank = 0;
  int size = 1;
};
World world() {
  World w;
  int on = 0;
  MPI_Initialized(&on);
  if (on != 0) {
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  }
  return w;
}

void lockstep() {
  if (world().size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

// Median seconds of one call of `op` (after one untimed call), the ranks in lockstep.
double median_seconds(Backend& be, int reps, const std::function<void()>& op) {
  return median_op_seconds(be, reps, op, lockstep);
}

float* f(DeviceBuffer& b) {
  return b.as<float>();
}

// n floats of a small constant (uninitialised memory may hold NaNs or denormals, which run slower).
DeviceBuffer floats(Backend& be, std::size_t n) {
  DeviceBuffer b(be, sizeof(float) * n);
  be.fill(b.as<float>(), 0.01f, n);
  return b;
}

// FLOP/s of the transformer's matmuls at (N = B*T rows, C) as a step calls them: qkv, attention
// projection, MLP up and down of each of `layers` layers, each layer with operands of its own, every
// layer's forward in order, then every layer's backward (input and weight gradients) in reverse; FLOPs
// over the two passes' median times. Timing each shape alone on one operand set, called back to back,
// keeps its weights in cache and ran 12-18% faster (gpt2-mini, 1 thread: 120 against 102-108 GFLOP/s)
// than the step's own matmuls, 106.5 GFLOP/s measured inside a real step (docs/reproducing.md).
double matmul_flops_per_s(Backend& be, int reps, int N, int C, int layers) {
  struct Operands {
    int IC, OC;
    DeviceBuffer in, w, out, din, dw;
  };
  const int shapes[][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
  const auto n = static_cast<std::size_t>(N);
  std::vector<Operands> ops;  // in call order: layer 0's four matmuls, then layer 1's, ...
  double flops = 0;
  for (int l = 0; l < layers; ++l) {
    for (const auto& s : shapes) {
      const auto ic = static_cast<std::size_t>(s[0]), oc = static_cast<std::size_t>(s[1]);
      ops.push_back({s[0], s[1], floats(be, n * ic), floats(be, ic * oc), floats(be, n * oc),
                     floats(be, n * ic), floats(be, ic * oc)});
      flops += 3.0 * 2.0 * N * s[0] * s[1];
    }
  }
  const double fwd = median_seconds(be, reps, [&] {
    for (Operands& o : ops) be.matmul_forward(f(o.out), f(o.in), f(o.w), nullptr, N, o.IC, o.OC);
  });
  const double bwd = median_seconds(be, reps, [&] {
    for (auto o = ops.rbegin(); o != ops.rend(); ++o)
      be.matmul_backward(f(o->din), f(o->dw), nullptr, f(o->out), f(o->in), f(o->w), N, o->IC, o->OC);
  });
  return flops / (fwd + bwd);
}

// The layers matmul_flops_per_s runs: the model's, or as many as fit kMatmulOperandBytes (a working
// set that large is far beyond any cache: more layers would not change the rate, only the memory).
int matmul_layers(int n_layer, int N, int C) {
  constexpr double kMatmulOperandBytes = 512.0 * (1 << 20);
  const double per_layer = 4.0 * (24.0 * C * C + 23.0 * N * C);  // w and dw; in, out and din
  return std::max(1, std::min(n_layer, static_cast<int>(kMatmulOperandBytes / per_layer)));
}

// Bytes/s of the transformer's row kernels at its activations (N rows, C columns) — layer norm and
// GELU forward and backward, and a residual add — in the bytes the emulator charges each
// (core/emulated/emulated_backend.cpp) over their summed median times. On a CPU the first four are
// not streams of bytes (a row's mean and variance, a tanh per element, a thread team's start-up), and
// a plain add alone ran 15-20 times faster per byte than layer norm at gpt2-mini's (64, 256).
double row_kernel_bytes_per_s(Backend& be, int reps, int N, int C) {
  const auto rows = static_cast<std::size_t>(N), cols = static_cast<std::size_t>(C);
  const std::size_t nc = rows * cols, n4 = 4 * nc;
  DeviceBuffer x = floats(be, n4), y = floats(be, n4), dy = floats(be, n4), dx = floats(be, n4),
               w = floats(be, cols), b = floats(be, cols), dw = floats(be, cols), db = floats(be, cols),
               mean = floats(be, rows), rstd = floats(be, rows);
  be.fill(f(rstd), 1.0f, rows);
  struct Kernel {
    std::size_t floats;  // what the emulator charges it, in floats moved
    std::function<void()> run;
  };
  const Kernel kernels[] = {
      {2 * nc + 2 * rows, [&] { be.layernorm_forward(f(y), f(mean), f(rstd), f(x), f(w), f(b), N, C); }},
      {4 * nc,
       [&] { be.layernorm_backward(f(dx), f(dw), f(db), f(dy), f(x), f(w), f(mean), f(rstd), N, C); }},
      {2 * n4, [&] { be.gelu_forward(f(y), f(x), n4); }},
      {4 * n4, [&] { be.gelu_backward(f(dx), f(x), f(dy), n4); }},
      {3 * nc, [&] { be.add(f(y), f(x), f(dy), nc); }},
  };
  double bytes = 0, seconds = 0;
  for (const Kernel& k : kernels) {
    bytes += static_cast<double>(k.floats * sizeof(float));
    seconds += median_seconds(be, reps, k.run);
  }
  return bytes / seconds;
}

// Bytes/s of element-wise ops (out = a + b: two floats read, one written) over n floats.
double elementwise_bytes_per_s(Backend& be, int reps, std::size_t n) {
  DeviceBuffer a = floats(be, n), b = floats(be, n), o = floats(be, n);
  return 3.0 * sizeof(float) * n / median_seconds(be, reps, [&] { be.add(f(o), f(a), f(b), n); });
}

// Bytes/s AdamW streams over the model's parameters (p, g, m, v read; p, m, v written: 28 bytes each),
// called as the optimizer calls it (once per tensor, weight decay on the matrices) right after the
// model's forward and backward: the optimizer follows the backward in every step, and the cache state
// the backward leaves is part of its cost (alone and warm, AdamW ran 1.8x faster on 2 threads than
// after a backward). The per-call overhead, which the emulator charges per op, is taken out.
double optimizer_bytes_per_s(Backend& be, int reps, const ModelOptions& mo, int batch, int seq,
                             double op_overhead_s) {
  std::unique_ptr<Model> model = make_model(be, mo);
  OptimizerConfig oc;
  oc.weight_decay = 0.1f;  // a decay split as training's default (engine/trainer.h)
  std::unique_ptr<Optimizer> adamw = make_optimizer(be, oc, model->num_params());
  Batch b;  // a token model's batch (measure_profile refuses the others)
  b.B = batch;
  b.T = seq;
  b.tokens.assign(static_cast<std::size_t>(batch) * seq, 1);
  b.targets = b.tokens;
  model->reserve(batch, seq);
  std::vector<double> t;
  for (long step = 1; step <= reps + 1; ++step) {
    model->zero_grad();
    model->forward(b);
    model->backward({});
    be.synchronize();
    lockstep();
    const auto t0 = std::chrono::steady_clock::now();
    adamw->step(*model, 1e-4f, 1.0f, step);
    be.synchronize();
    if (step > 1) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double median = median_of(std::move(t));
  const double calls = static_cast<double>(model->params().size());
  const double s = std::max(median - calls * op_overhead_s, median / 2);
  return 28.0 * static_cast<double>(model->num_params()) / s;
}

// Bytes/s of one copy of a ring segment (1 MiB): the shared-memory link between two ranks of a host.
double copy_bytes_per_s(Backend& be, int reps) {
  constexpr std::size_t kSegment = std::size_t{1} << 20;
  DeviceBuffer a(be, kSegment), b(be, kSegment);
  return kSegment / median_seconds(be, reps, [&] { be.copy(b.data(), a.data(), kSegment); });
}

// Bytes the rank's threads keep in cache: their L2s (what the element-wise ops at the activations'
// size run from; larger ops, such as those over the parameters, stream from memory).
double cache_bytes(int threads) {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  constexpr double kFallback = 1 << 20;  // when the system does not say
  return (l2 > 0 ? static_cast<double>(l2) : kFallback) * threads;
}

// AES-256-GCM seal GB/s of `threads` cores at the ring's 1 MiB segments.
double aead_gbps(int threads) {
  lockstep();
  const auto recs =
      bench::run_crypto_bench(*tee::parse_cipher("aes-256-gcm"), {std::size_t{1} << 20}, threads, 0.2);
  double seal = 0, open = 0;
  for (const auto& r : recs) (r.mode == "seal" ? seal : open) = r.gbps;
  return std::min(seal, open);
}

// Seconds of the smallest op (an add of one float): what every op costs beyond its work here.
double op_overhead_seconds(Backend& be, int reps) {
  DeviceBuffer a = floats(be, 1), b = floats(be, 1), o = floats(be, 1);
  return median_seconds(be, reps, [&] { be.add(f(o), f(a), f(b), 1); });
}

// The profile: the GpuSpec fields the emulator reads, each from one measurement above. The CPU has
// one rate for every precision and no separate convolution rate (convolutions are not measured: a
// profile for image models would need one).
GpuSpec measure_profile(const HostProfileOptions& o, nlohmann::json& measured) {
  const nlohmann::json mc = model_config_json(o.model);
  if (!mc.contains("n_embd"))
    throw InputError("--model: host-profile measures transformer shapes; choose a gpt2 or bert model");
  std::unique_ptr<Backend> be = make_backend(backend_options(DeviceKind::Cpu, o.threads));
  const int C = mc["n_embd"].get<int>(), N = o.batch * o.seq;
  const int layers = matmul_layers(mc["n_layer"].get<int>(), N, C);
  const double mm = matmul_flops_per_s(*be, o.reps, N, C, layers);
  const double ew = row_kernel_bytes_per_s(*be, o.reps, N, C);
  const auto params = mc["params"].get<std::size_t>();
  const double mem = elementwise_bytes_per_s(*be, std::max(3, o.reps / 4), params);
  const double cp = copy_bytes_per_s(*be, o.reps);
  const double op = op_overhead_seconds(*be, o.reps);
  const double opt = optimizer_bytes_per_s(*be, std::max(3, o.reps / 2), o.model, o.batch, o.seq, op);
  const double aead = aead_gbps(o.threads);
  constexpr double kStreamingShare = 0.8;  // EmulatedGpu paces element-wise ops at 80% of hbm_gbps
  GpuSpec g{.name = "host",
            .peak_tflops_fp32 = mm / 1e12,
            .peak_tflops_tf32 = mm / 1e12,
            .peak_tflops_bf16 = mm / 1e12,
            .hbm_gbps = ew / 1e9 / kStreamingShare,
            .efficiency = 1.0,
            .act_traffic = 1.0,
            .aead_gbps = aead,
            .nvlink_gbps = cp / 1e9,
            .conv_efficiency = 1.0,
            .conv_efficiency_fp32 = 1.0,
            .sms = o.threads,
            .memory_gib = 0,  // not checked: a host's memory is not what an emulated GPU holds
            .row_kernel_seconds = op,
            .attention_efficiency = 1.0,
            .row_traffic = 1.0,
            .scores_traffic = 1.0,
            .optimizer_gbps = opt / 1e9,
            .cache_bytes = cache_bytes(o.threads),
            .memory_gbps = mem / 1e9};
  measured = {{"backend", be->describe()},
              {"model", o.model.name},
              {"batch", o.batch},
              {"seq", o.seq},
              {"threads", o.threads},
              {"matmul_gflops", mm / 1e9},
              {"matmul_layers", layers},
              {"elementwise_gbps", ew / 1e9},
              {"optimizer_gbps", opt / 1e9},
              {"memory_elementwise_gbps", mem / 1e9},
              {"cache_bytes", g.cache_bytes},
              {"copy_1mib_gbps", cp / 1e9},
              {"op_overhead_us", op * 1e6},
              {"aes256gcm_gbps", aead}};
  return g;
}

void run_host_profile(const HostProfileOptions& o) {
  nlohmann::json measured;
  const GpuSpec g = measure_profile(o, measured);
  nlohmann::json j = platform_profile_json(g);
  j["about"] = "This machine measured by `teetrain bench host-profile` (" + o.model.name + " shapes, batch " +
               std::to_string(o.batch) + " x " + std::to_string(o.seq) + ", " + std::to_string(o.threads) +
               " thread(s)): matmuls at the transformer's shapes, each layer's own, in a step's order "
               "(peak, efficiency 1), its row kernels at the activations: layer norm, GELU and a residual "
               "add (hbm_gbps = their rate / 0.8; memory_gbps: an add over the parameters, which ops larger "
               "than cache_bytes, the threads' L2, run at), AdamW per tensor after the model's backward, "
               "1 MiB copies (the link), one-float adds (row_kernel_seconds), AES-256-GCM at 1 MiB "
               "(aead_gbps, host.aead_gbps_per_core). Convolutions are not measured.";
  j["measured"] = measured;
  j["host"] = {{"aead_gbps_per_core", measured["aes256gcm_gbps"].get<double>() / o.threads}};
  // Under mpirun every rank measured its share in lockstep; rank 0 reports and writes the profile.
  if (world().rank != 0) return;
  std::printf("# teetrain bench host-profile: %s\n%s\n", o.out.empty() ? "(no --out)" : o.out.c_str(),
              measured.dump(1).c_str());
  if (!o.out.empty()) write_json_file("--out", o.out, j);
}

struct EmulatedStepOptions {
  ModelOptions model;
  int batch = 4;
  int seq = 1024;
  std::string gpu = "h100";
  GpuPrecision precision = GpuPrecision::Tf32;
  CcHardware cc = CcHardware::None;
  GpuBaseline baseline = GpuBaseline::Teetrain;  // Note [Fused attention baseline]
  double fused_efficiency = 0;
  std::string json;
  bool kernel_groups = false;  // also list each pass's kernel groups (KernelGroup)
};

// The CC row the step is charged with (Note [CC hardware costs]): what tools/validate_emulator.py
// compares with the published CC measurements. The emulator models no CC slowdown of a kernel itself.
nlohmann::json cc_costs_json(const CcCosts& c) {
  return {{"name", enum_name(c.hardware)},
          {"d2h_gbps", c.d2h_gbps},
          {"h2d_gbps", c.h2d_gbps},
          {"d2h_fixed_us", c.d2h_fixed_us},
          {"h2d_fixed_us", c.h2d_fixed_us},
          {"launch_us", c.launch_us},
          {"launch_extra_us", c.launch_extra_us},
          {"kernel_time_ratio", 1.0},
          {"peer",
           {{"path", enum_name(c.peer.path)},
            {"sender_us", c.peer.sender_us},
            {"receiver_us", c.peer.receiver_us},
            {"d2h_gbps", c.peer.d2h_gbps},
            {"h2d_gbps", c.peer.h2d_gbps},
            {"link_gbps", c.peer.link_gbps}}}};
}

// Of a pass's seconds, each kind of work's (Note [Transformer kernel model]), and its kernel launches:
// what tools/fit_gpu_kernels.py refits the constants from.
nlohmann::json work_json(const EmulatedBackend& be) {
  nlohmann::json j{{"kernel_launches", be.kernels()}};
  for (const auto& [name, w] : EnumNames<EmulatedWork>::all) j[std::string(name) + "_s"] = be.seconds(w);
  return j;
}

// A pass's kernel groups in the order charged, each [kernels, seconds of every EmulatedWork in its
// order]: what tools/fit_gpu_kernels.py replays through a launch queue.
nlohmann::json kernel_groups_json(const std::vector<KernelGroup>& groups) {
  nlohmann::json j = nlohmann::json::array();
  for (const KernelGroup& g : groups) {
    nlohmann::json row{g.kernels};
    for (double s : g.seconds) row.push_back(s);
    j.push_back(std::move(row));
  }
  return j;
}

// The constants the step was costed with, as work_json's terms scale with them.
nlohmann::json constants_json(const EmulatedGpu& g) {
  return {
      {"efficiency", g.efficiency()},         {"attention_efficiency", g.spec.attention_efficiency},
      {"act_traffic", g.act_traffic()},       {"row_traffic", g.row_traffic()},
      {"scores_traffic", g.scores_traffic()}, {"launch_s", g.spec.row_kernel_seconds},
      {"baseline", enum_name(g.baseline)},    {"fused_attention_efficiency", g.fused_attention_efficiency()}};
}

// One training step costed op by op on the emulated GPU (Account mode: nothing waits), as
// `bench step` times it: zero grad, forward, backward, and AdamW (language models) or SGD (images).
void run_emulated_step(const EmulatedStepOptions& o) {
  EmulatedGpu gpu{resolve_gpu_spec(o.gpu), o.precision};
  gpu.cc = cc_costs(o.cc);
  gpu.baseline = o.baseline;
  gpu.fused_efficiency_override = o.fused_efficiency;
  EmulatedBackend be(gpu, EmulatedBackend::Timing::Account, std::size_t{1} << 20);
  std::unique_ptr<Model> model = make_model(be, o.model);
  const nlohmann::json mc = model_config_json(o.model);
  const bool image = is_image_model(o.model);
  const Batch b = placeholder_batch(mc, image, o.batch, o.seq);
  model->reserve(o.batch, o.seq);
  be.reset_seconds();
  std::vector<KernelGroup> fwd_groups, bwd_groups;
  be.log_kernels(&fwd_groups);
  model->zero_grad();
  model->forward(b);
  const double fwd = be.seconds(), fwd_conv = be.seconds(EmulatedWork::Conv);
  const nlohmann::json fwd_work = work_json(be);
  be.reset_seconds();
  be.log_kernels(&bwd_groups);
  model->backward({});
  be.log_kernels(nullptr);
  const double bwd = be.seconds(), bwd_conv = be.seconds(EmulatedWork::Conv);
  const nlohmann::json bwd_work = work_json(be);
  be.reset_seconds();
  const std::size_t n = model->num_params();
  if (image) {
    be.sgd_update(model->param_data(), model->grad_data(), nullptr, n, SgdConfig{.momentum = 0.9f}, 1.0f);
  } else {
    be.adamw_update(model->param_data(), model->grad_data(), nullptr, nullptr, n, AdamWConfig{}, 1.0f, 1);
  }
  const double opt = be.seconds();
  nlohmann::json j{{"model", mc},
                   {"batch", o.batch},
                   {"seq", image ? 0 : o.seq},
                   {"gpu", o.gpu},
                   {"precision", enum_name(o.precision)},
                   {"forward_s", fwd},
                   {"backward_s", bwd},
                   {"optimizer_s", opt},
                   {"forward_conv_s", fwd_conv},  // of forward_s and backward_s: the convolutions'
                   {"backward_conv_s", bwd_conv},
                   {"step_s", fwd + bwd + opt},
                   {"forward_work", fwd_work},
                   {"backward_work", bwd_work},
                   {"constants", constants_json(gpu)},
                   {"backend", be.describe()}};
  if (o.cc != CcHardware::None) j["cc"] = cc_costs_json(gpu.cc);
  if (o.kernel_groups) {
    nlohmann::json kinds = nlohmann::json::array({"kernels"});
    for (const auto& [name, w] : EnumNames<EmulatedWork>::all) kinds.push_back(std::string(name) + "_s");
    j["kernel_groups"] = {{"columns", kinds},
                          {"forward", kernel_groups_json(fwd_groups)},
                          {"backward", kernel_groups_json(bwd_groups)}};
  }
  std::printf("%s\n", j.dump(1).c_str());
  if (!o.json.empty()) write_json_file("--json", o.json, j);
}

}  // namespace

void register_bench_emulated_step(CLI::App* bench) {
  auto o = std::make_shared<EmulatedStepOptions>();
  auto* c = bench->add_subcommand("emulated-step",
                                  "The emulator's prediction of `bench step --device cuda`: one step of the "
                                  "model on an emulated --gpu, costed op by op (no GPU needed)");
  add_model_options(c, o->model);
  c->add_option("--batch", o->batch, "Batch")->check(positive())->capture_default_str();
  c->add_option("--seq", o->seq, "Sequence length (language models)")
      ->check(positive())
      ->capture_default_str();
  c->add_option("--image-size", o->model.image_size,
                "Image models: H = W of the input (default the preset's)")
      ->check(positive());
  c->add_option("--gpu", o->gpu, "h100, h200, a100, v100, or a platform profile FILE.json")
      ->capture_default_str();
  add_enum_option(c, "--gpu-precision", o->precision, "Which peak applies: fp32, tf32, bf16");
  add_enum_option(c, "--cc-hardware", o->cc,
                  "The GPU in CC mode (as train's --cc-hardware): the step pays its launches, and the JSON's "
                  "cc block holds the row's copy, launch and GPU-to-GPU costs");
  add_gpu_baseline_options(c, o->baseline, o->fused_efficiency);
  c->add_option("--json", o->json, "Write the prediction as JSON to FILE");
  c->add_flag("--kernel-groups", o->kernel_groups,
              "Also list each pass's kernel groups in the order charged (kernel_groups: each op's launches "
              "with its work by kind; what tools/fit_gpu_kernels.py replays)");
  c->callback([o] { run_emulated_step(*o); });
}

void register_bench_host_profile(CLI::App* bench) {
  auto o = std::make_shared<HostProfileOptions>();
  auto* c = bench->add_subcommand(
      "host-profile",
      "Measure this machine as a platform profile for `train --compute emulate --gpu FILE.json`: matmul "
      "(each layer's own operands, in a step's order), element-wise (the row kernels at the activations', "
      "an add at the parameters' size), optimizer, copy and AES-GCM rates of the CPU backend at a "
      "transformer's shapes. Under `mpirun -np P` the P ranks measure in lockstep (each rank's share of "
      "the machine, contending as a P-rank step's ranks do) and rank 0 writes --out");
  add_model_options(c, o->model);
  c->add_option("--batch", o->batch, "Batch (the shapes measured: batch x seq rows)")
      ->check(positive())
      ->capture_default_str();
  c->add_option("--seq", o->seq, "Sequence length")->check(positive())->capture_default_str();
  c->add_option("--threads", o->threads, "CPU threads (one rank's share of the cores)")
      ->check(positive())
      ->capture_default_str();
  c->add_option("--reps", o->reps, "Timed calls per op (the median is kept)")
      ->check(positive())
      ->capture_default_str();
  c->add_option("--out", o->out, "Write the profile as JSON to FILE");
  c->callback([o] { run_host_profile(*o); });
}

}  // namespace tt::cli
