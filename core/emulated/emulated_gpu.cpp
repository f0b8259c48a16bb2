#include "core/emulated/emulated_gpu.h"

#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace tt {

std::vector<GpuSpec> gpu_specs() {
  // Dense peaks (the data sheets' starred figures are with 2:4 sparsity; halved here).
  //
  // The measured figures (emulated_gpu.h) come from two sets of real CUDA steps of teetrain's own
  // kernels, costed op by op by EmulatedBackend and fitted by least squares on relative error:
  // - gpt2 ... gpt2-xl at B = 4, T = 1024, TF32 and FP32, on an H200 (tests/fixtures/
  //   gpu_size_sweep_h200): with matmuls at 0.76 of peak (cuBLAS alone at those shapes: 71-80% of TF32
  //   peak, 68-75% of FP32), element-wise traffic x1.19 and 40 us per transformer kernel put all
  //   eight within 5.6%, and within 3.4% of the step-level model used before (FLOPs / (peak x 0.76) +
  //   15 x activation bytes / (0.8 x HBM)). The per-kernel term is what makes the small models'
  //   model-FLOP utilisation low (18% for TF32 gpt2, 31% for gpt2-xl).
  // - resnet18/50/152 at 224 px, batch 32, TF32 and FP32, on an H100 (tests/fixtures/step_h100):
  //   with the same element-wise figures (and our batch norm's one block per channel), convolutions at
  //   0.21 of FP32 peak put the FP32 steps within 13%. On tensor cores one efficiency per FLOP (0.086)
  //   missed by up to 23%: ResNet-18's 64-channel layers run slower per FLOP than ResNet-152's
  //   256-channel ones. Charging each implicit GEMM the whole 128 x 256 tiles that cover its output
  //   (kTensorTileM, kTensorTileN: the kernel's tile, not a fitted number) and refitting the one
  //   efficiency over full tiles (0.128) puts the three TF32 steps within 7%. FP32 runs on CUDA
  //   cores, whose smaller tiles waste little: there the tile term made the fit worse and is not used
  //   (resnet50 FP32 still runs 13% slower, resnet152 11% faster, than one efficiency allows).
  // Not measured on the other GPUs: they use the same figures.
  constexpr double kEff = kMeasuredMatmulEfficiency, kTraffic = kMeasuredActTraffic;
  constexpr double kConv = kMeasuredConvEfficiency, kConv32 = kMeasuredConvEfficiencyFp32;
  return {
      // NVIDIA H100 SXM5 data sheet: FP32 67, TF32 989* / BF16 1979* TFLOPS (sparse), HBM3 3.35 TB/s, 80 GB.
      // AES-GCM: our kernel (tee/cuda) sealed 148.8 GB/s on an H200 for 64 x 1 MiB messages, the ring's
      // segment size (bench_gpu_aead, 2026-11-26). It is bound by SM integer throughput, not memory (it
      // moves ~0.3 TB/s of HBM's 3-5), and an H100 SXM has the same 132 SMs: the H200 figure is used.
      // NVLink 4: 18 links x 25 GB/s per direction = 450 GB/s each way (900 GB/s total).
      {"h100", 67.0, 494.7, 989.4, 3350.0, kEff, kTraffic, 148.8, 450.0, kConv, kConv32, 132, 80.0},
      // NVIDIA H200 SXM data sheet: same Hopper compute as H100 SXM, HBM3e 4.8 TB/s, 141 GB.
      {"h200", 67.0, 494.7, 989.4, 4800.0, kEff, kTraffic, 148.8, 450.0, kConv, kConv32, 132, 141.0},
      // NVIDIA A100 80GB SXM data sheet: FP32 19.5, TF32 156, BF16 312 TFLOPS, HBM2e 2039 GB/s.
      // NVLink 3: 12 links x 25 GB/s = 300 GB/s each way.
      {"a100", 19.5, 156.0, 312.0, 2039.0, kEff, kTraffic, 0.0, 300.0, kConv, kConv32, 108, 80.0},
      // NVIDIA V100 SXM2 data sheet: FP32 15.7 TFLOPS, FP16 tensor 125 TFLOPS (no TF32/BF16: the
      // tf32 column repeats FP32, the bf16 column is FP16 mixed precision), HBM2 900 GB/s, 32 GB.
      // NVLink 2: 6 links x 25 GB/s = 150 GB/s each way.
      {"v100", 15.7, 15.7, 125.0, 900.0, kEff, kTraffic, 0.0, 150.0, kConv, kConv32, 80, 32.0},
  };
}

CcCosts cc_costs(CcHardware h) {
  // ISPASS 2025 artifact (Note [CC hardware costs]): the copy rates and added fixed costs are
  // tools/predict_paper.py's fit of t(B) = fixed + B / rate to the bandwidth sweep (64 B .. 64 MiB), CC
  // on minus CC off; the launches are median cudaLaunchKernel times (fig12).
  constexpr double kLaunchCc = 9.98, kLaunchOff = 4.93;
  switch (h) {
    case CcHardware::None:
      break;
    case CcHardware::H100Pinned:
      return {.hardware = h,
              .d2h_gbps = 2.926,
              .h2d_gbps = 2.880,
              .d2h_fixed_us = 20.05,
              .h2d_fixed_us = 20.87,
              .launch_us = kLaunchCc,
              .launch_extra_us = kLaunchCc - kLaunchOff};
    case CcHardware::H100Pageable:
      return {.hardware = h,
              .d2h_gbps = 2.519,
              .h2d_gbps = 2.617,
              .d2h_fixed_us = 37.00,
              .h2d_fixed_us = 33.39,
              .launch_us = kLaunchCc,
              .launch_extra_us = kLaunchCc - kLaunchOff};
  }
  return {};
}

double CcCosts::copy_seconds(bool to_device, double bytes) const {
  return (to_device ? h2d_fixed_us : d2h_fixed_us) * 1e-6 + bytes / ((to_device ? h2d_gbps : d2h_gbps) * 1e9);
}

GpuSpec gpu_spec(const std::string& name) {
  std::string names;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.name == name) return g;
    names += (names.empty() ? "" : ", ") + g.name;
  }
  throw InputError("unknown GPU '" + name + "': choose one of " + names + " (or set --gpu-tflops)");
}

void validate_gpu_spec(const GpuSpec& g) {
  const std::pair<const char*, double> positive[] = {
      {"peak_tflops_fp32", g.peak_tflops_fp32}, {"peak_tflops_tf32", g.peak_tflops_tf32},
      {"peak_tflops_bf16", g.peak_tflops_bf16}, {"hbm_gbps", g.hbm_gbps},
      {"nvlink_gbps", g.nvlink_gbps},           {"sms", static_cast<double>(g.sms)}};
  for (const auto& [field, v] : positive)
    if (!(v > 0)) throw InputError(std::string("GPU '") + g.name + "': " + field + " must be positive");
  const std::pair<const char*, double> fraction[] = {{"efficiency", g.efficiency},
                                                     {"conv_efficiency", g.conv_efficiency},
                                                     {"conv_efficiency_fp32", g.conv_efficiency_fp32}};
  for (const auto& [field, v] : fraction)
    if (!(v > 0 && v <= 1))
      throw InputError(std::string("GPU '") + g.name + "': " + field + " must be in (0, 1]");
  const std::pair<const char*, double> non_negative[] = {{"act_traffic", g.act_traffic},
                                                         {"cache_bytes", g.cache_bytes},
                                                         {"memory_gbps", g.memory_gbps},
                                                         {"aead_gbps", g.aead_gbps},
                                                         {"row_kernel_seconds", g.row_kernel_seconds},
                                                         {"optimizer_gbps", g.optimizer_gbps}};
  for (const auto& [field, v] : non_negative)
    if (!(v >= 0)) throw InputError(std::string("GPU '") + g.name + "': " + field + " must not be negative");
}

double EmulatedGpu::aead_gbps() const {
  const double r = aead_override > 0 ? aead_override : spec.aead_gbps;
  if (!(r > 0)) {
    throw InputError("emulated GPU '" + spec.name +
                     "' has no measured AES-GCM rate for --tee-device-crypto; give "
                     "--gpu-aead-gbps (measure it with build/tests/bench/bench_gpu_aead on that GPU), or "
                     "--tee-device-crypto off");
  }
  return r;
}

double EmulatedGpu::flops_per_second() const {
  double peak = 0;
  if (tflops_override > 0) {
    peak = tflops_override;
  } else {
    switch (precision) {
      case GpuPrecision::Fp32:
        peak = spec.peak_tflops_fp32;
        break;
      case GpuPrecision::Tf32:
        peak = spec.peak_tflops_tf32;
        break;
      case GpuPrecision::Bf16:
        peak = spec.peak_tflops_bf16;
        break;
    }
  }
  const double eff = efficiency();
  if (!(peak > 0) || !(eff > 0) || eff > 1.0) {
    throw InputError("emulated GPU needs a positive peak and an efficiency in (0, 1]; got " +
                     std::to_string(peak) + " TFLOP/s x " + std::to_string(eff));
  }
  return peak * 1e12 * eff;
}

double EmulatedGpu::conv_flops_per_second() const {
  return flops_per_second() / efficiency() *
         (precision == GpuPrecision::Fp32 && tflops_override <= 0 ? spec.conv_efficiency_fp32
                                                                  : spec.conv_efficiency);
}

double EmulatedGpu::conv_gemm_flops(double M, double N, double K) const {
  const bool tensor_cores = precision != GpuPrecision::Fp32 && tflops_override <= 0;
  if (!tensor_cores || M <= 0 || N <= 0) return 2.0 * M * N * K;
  const double tiles_m = std::ceil(M / kTensorTileM), tiles_n = std::ceil(N / kTensorTileN);
  return 2.0 * tiles_m * kTensorTileM * tiles_n * kTensorTileN * K;
}

double EmulatedGpu::elementwise_seconds(double bytes) const {
  const double traffic = bytes * act_traffic() * (precision == GpuPrecision::Bf16 ? 0.5 : 1.0);
  // Beyond the cache, the rate measured from memory (itself, not a share of a peak).
  if (spec.cache_bytes > 0 && spec.memory_gbps > 0 && bytes > spec.cache_bytes)
    return traffic / (spec.memory_gbps * 1e9);
  constexpr double kHbmEfficiency = 0.8;  // streaming kernels reach ~80% of HBM bandwidth
  return traffic / (spec.hbm_gbps * 1e9 * kHbmEfficiency);
}

double EmulatedGpu::optimizer_seconds(double bytes) const {
  // Our AdamW kernel reached 51% (gpt2) to 65% (gpt2-xl) of an H200's HBM bandwidth
  // (tests/fixtures/gpu_size_sweep_h200); the FLOP efficiency does not apply to it.
  // A platform profile may give the rate it measured instead (optimizer_gbps).
  constexpr double kHbmEfficiency = 0.6;
  return bytes / (spec.optimizer_gbps > 0 ? spec.optimizer_gbps * 1e9 : spec.hbm_gbps * 1e9 * kHbmEfficiency);
}

std::string EmulatedGpu::describe() const {
  char buf[200];
  const double peak = flops_per_second() / efficiency() / 1e12;
  // The convolutions' figure is the one conv_flops_per_second() uses: exact FP32 has its own.
  const double conv = conv_flops_per_second() / (peak * 1e12);
  std::snprintf(buf, sizeof buf, "%s %s %.1f TFLOP/s x %.2f (conv x %.2f) + element-wise x%.2f at %.0f GB/s",
                spec.name.c_str(), tflops_override > 0 ? "custom" : enum_name(precision), peak, efficiency(),
                conv, act_traffic(), spec.hbm_gbps);
  if (!cc.on()) return buf;
  char more[200];
  std::snprintf(more, sizeof more,
                "; CC mode (%s, ISPASS 2025): copies %.2f/%.2f GB/s + %.0f us, launches +%.2f us",
                enum_name(cc.hardware), cc.d2h_gbps, cc.h2d_gbps, cc.crossing_us(), cc.launch_extra_us);
  return std::string(buf) + more;
}

}  // namespace tt
