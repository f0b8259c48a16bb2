// `teetrain bench conv`: a model's convolutions layer by layer, each distinct shape's forward, input
// gradient and weight gradient timed on a backend (bench/conv_bench.h), or, with --gpu, as the emulated
// GPU charges them: the per-layer counterpart of `bench step` and `bench emulated-step`.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/conv_bench.h"
#include "core/emulated/emulated_backend.h"
#include "engine/run/platform_profile.h"
#include "models/model_registry.h"
#include "tools/cli/bench_common.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct ConvBenchOptions {
  ModelOptions model{"resnet50"};
  int batch = 32;
  int threads = 2;
  DeviceKind device = DeviceKind::Cpu;
  bool tf32 = false;
  std::string gpu;  // set: the emulated GPU's charges instead of a backend's times
  GpuPrecision precision = GpuPrecision::Fp32;
  int reps = 10;
  std::string json;
};

// The model's convolutions as its forward calls them (an emulated backend that only accounts).
std::vector<Conv2dShape> model_convs(const ConvBenchOptions& o) {
  EmulatedBackend be(EmulatedGpu{gpu_spec("h100"), GpuPrecision::Fp32}, EmulatedBackend::Timing::Account,
                     std::size_t{1} << 20);
  std::unique_ptr<Model> model = make_model(be, o.model);
  const Batch b = placeholder_batch(model_config_json(o.model), true, o.batch, 0);
  model->reserve(o.batch, 0);
  std::vector<Conv2dShape> calls;
  be.log_convs(&calls);
  model->forward(b);
  be.log_convs(nullptr);
  return calls;
}

// The backend the layers are timed on, and how one call is timed there.
struct Timer {
  std::unique_ptr<Backend> backend;
  bench::OpSeconds seconds;
};

Timer make_timer(const ConvBenchOptions& o) {
  Timer t;
  if (!o.gpu.empty() && (o.device != DeviceKind::Cpu || o.tf32))
    throw InputError(
        "--gpu prices the layers on an emulated GPU; --device and --tf32 choose a real backend: give one");
  if (!o.gpu.empty()) {
    auto be = std::make_unique<EmulatedBackend>(EmulatedGpu{resolve_gpu_spec(o.gpu), o.precision},
                                                EmulatedBackend::Timing::Account, std::size_t{1} << 20);
    EmulatedBackend* e = be.get();
    t.seconds = [e](const std::function<void()>& op) {
      e->reset_seconds();
      op();
      return e->seconds();
    };
    t.backend = std::move(be);
    return t;
  }
  t.backend = bench_backend(o.device, o.threads, o.tf32);
  Backend* be = t.backend.get();
  const int reps = o.reps;
  t.seconds = [be, reps](const std::function<void()>& op) { return median_op_seconds(*be, reps, op); };
  return t;
}

std::string shape_text(const Conv2dShape& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%dx%d/%d %d->%d @%dx%d", s.KH, s.KW, s.stride, s.IC, s.OC, s.H, s.W);
  return buf;
}

double tflops(double flops, double s) {
  return s > 0 ? flops / s / 1e12 : 0.0;
}

void run_conv_bench(const ConvBenchOptions& o) {
  if (!is_image_model(o.model))
    throw InputError("--model: bench conv times convolutions; choose a resnet model");
  const std::vector<bench::ConvLayer> layers = bench::distinct_convs(model_convs(o));
  Timer timer = make_timer(o);
  std::printf("# teetrain bench conv: %s, batch %d, %zu distinct convolutions\n# backend: %s\n",
              o.model.name.c_str(), o.batch, layers.size(), timer.backend->describe().c_str());
  std::printf(
      "# ms per call (median of %d) and TFLOP/s; a step calls each `calls` times (dgrad: none for the "
      "input layer)\n",
      o.gpu.empty() ? o.reps : 1);
  std::printf("%-3s %-28s %5s %10s %7s %10s %7s %10s %7s\n", "#", "kernel/stride in->out @HxW", "calls",
              "fwd_ms", "TFLOP/s", "dgrad_ms", "TFLOP/s", "wgrad_ms", "TFLOP/s");
  nlohmann::json records = nlohmann::json::array();
  double total[3] = {0, 0, 0};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const bench::ConvLayer& l = layers[i];
    const bench::ConvTimes t = bench::time_conv_layer(*timer.backend, l, timer.seconds);
    const double f = bench::conv_flops(l.shape);
    std::printf("%-3zu %-28s %5d %10.3f %7.2f %10.3f %7.2f %10.3f %7.2f\n", i, shape_text(l.shape).c_str(),
                l.calls, t.forward_s * 1e3, tflops(f, t.forward_s), t.dgrad_s * 1e3, tflops(f, t.dgrad_s),
                t.wgrad_s * 1e3, tflops(f, t.wgrad_s));
    total[0] += l.calls * t.forward_s;
    total[1] += l.calls * t.dgrad_s;
    total[2] += l.calls * t.wgrad_s;
    const Conv2dShape& s = l.shape;
    records.push_back({{"B", s.B},
                       {"IC", s.IC},
                       {"H", s.H},
                       {"W", s.W},
                       {"OC", s.OC},
                       {"KH", s.KH},
                       {"KW", s.KW},
                       {"stride", s.stride},
                       {"pad", s.pad},
                       {"calls", l.calls},
                       {"input_layer", l.input_layer},
                       {"flops", f},
                       {"forward_s", t.forward_s},
                       {"dgrad_s", t.dgrad_s},
                       {"wgrad_s", t.wgrad_s}});
  }
  std::printf("per step: forward %.3f ms, dgrad %.3f ms, wgrad %.3f ms (convolutions only)\n", total[0] * 1e3,
              total[1] * 1e3, total[2] * 1e3);
  if (o.json.empty()) return;
  const nlohmann::json j{{"model", model_config_json(o.model)},
                         {"batch", o.batch},
                         {"backend", timer.backend->describe()},
                         {"emulated", !o.gpu.empty()},
                         {"layers", records},
                         {"step_forward_s", total[0]},
                         {"step_dgrad_s", total[1]},
                         {"step_wgrad_s", total[2]}};
  write_json_file("--json", o.json, j);
}

}  // namespace

void register_bench_conv(CLI::App* bench) {
  auto o = std::make_shared<ConvBenchOptions>();
  auto* c = bench->add_subcommand("conv",
                                  "A model's convolutions layer by layer: each distinct shape's forward, "
                                  "input gradient and weight gradient "
                                  "timed on a backend (--device), or as an emulated --gpu charges them; the "
                                  "per-layer view of `bench step` "
                                  "and `bench emulated-step`");
  add_model_options(c, o->model);
  c->add_option("--batch", o->batch, "Batch")->check(positive())->capture_default_str();
  c->add_option("--image-size", o->model.image_size, "H = W of the input (default the preset's)")
      ->check(positive());
  c->add_option("--threads", o->threads, "CPU threads")->check(positive())->capture_default_str();
  add_enum_option(c, "--device", o->device, "Where the convolutions run (cpu, cuda)");
  c->add_flag("--tf32", o->tf32, "CUDA: TF32 tensor cores (default exact FP32)");
  c->add_option("--gpu", o->gpu,
                "Instead of a backend: what this emulated GPU charges (h100, h200, a100, v100, or a "
                "platform profile FILE.json)");
  add_enum_option(c, "--gpu-precision", o->precision, "With --gpu: which peak applies (fp32, tf32, bf16)");
  c->add_option("--reps", o->reps, "Timed calls per pass (the median is kept)")
      ->check(positive())
      ->capture_default_str();
  c->add_option("--json", o->json, "Write the layers as JSON to FILE");
  c->callback([o] { run_conv_bench(*o); });
}

}  // namespace tt::cli
