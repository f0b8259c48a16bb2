#include "core/emulated/emulated_gpu.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace tt {

std::vector<GpuSpec> gpu_specs() {
  // Dense peaks (the data sheets' starred figures are with 2:4 sparsity; halved here).
  //
  // The measured figures (emulated_gpu.h) come from two sets of real CUDA steps of teetrain's own
  // kernels, costed op by op by EmulatedBackend and fitted by least squares on relative error:
  // - the transformer's (Note [Transformer kernel model], emulated_gpu.h): GPT-2 (124M) TF32 and FP32 at
  //   1 x 1024 ... 8 x 1024 tokens (tests/fixtures/gpu_token_sweep_h200) and gpt2 ... gpt2-xl at
  //   4 x 1024 (gpu_size_sweep_h200), on an H200, refitted by tools/fit_gpu_kernels.py: GEMMs at 0.717
  //   of peak, attention's batched GEMMs at 0.919, 11.5 us per kernel launch, row-wise traffic x0.498,
  //   the (T, T) scores' x1.87. The fit set's steps are within 11.7%, the held-out GPT-2 Medium sweep
  //   within 7.6% (its output lists every family). Before, one efficiency (0.76), element-wise traffic
  //   x1.19 and 40 us per transformer op, fitted at 4 x 1024 alone, missed the token sweep by up to 46%.
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
      // segment size (bench_gpu_aead, 2026-11-26; 148.8 again on 2026-11-30). It is bound by SM integer
      // throughput, not memory (it moves ~0.3 TB/s of HBM's 3-5), and an H100 SXM has the same 132 SMs:
      // the H200 figure is used.
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

namespace {

// fast's ciphertext through host memory: a crossing at each end at the row's copy costs.
PeerWire host_bounce(const CcCosts& c) {
  return {.path = PeerPath::HostBounce,
          .sender_us = c.d2h_fixed_us,
          .receiver_us = c.h2d_fixed_us,
          .d2h_gbps = c.d2h_gbps,
          .h2d_gbps = c.h2d_gbps,
          .link_gbps = 0};
}

CcCosts h100_row(CcHardware h) {
  // ISPASS 2025 artifact (Note [CC hardware costs]): the copy rates and added fixed costs are
  // tools/predict_paper.py's fit of t(B) = fixed + B / rate to the bandwidth sweep (64 B .. 64 MiB), CC
  // on minus CC off; the launches are median cudaLaunchKernel times (fig12).
  constexpr double kLaunchCc = 9.98, kLaunchOff = 4.93;
  const bool pinned = h == CcHardware::H100Pinned;
  CcCosts c{.hardware = h,
            .d2h_gbps = pinned ? 2.926 : 2.519,
            .h2d_gbps = pinned ? 2.880 : 2.617,
            .d2h_fixed_us = pinned ? 20.05 : 37.00,
            .h2d_fixed_us = pinned ? 20.87 : 33.39,
            .launch_us = kLaunchCc,
            .launch_extra_us = kLaunchCc - kLaunchOff,
            .peer = {},
            .peer_between = {},
            .node = NodeMessages::Sealed,
            .source = "ISPASS 2025"};
  c.peer = host_bounce(c);
  c.peer_between = c.peer;
  return c;
}

CcCosts blackwell_row() {
  // tools/calibration/platforms.json, blackwell-cc: the host bridge's copies at 0.203x (H2D) and 0.211x
  // (D2H) of the CC-off rate, B300's not published, so H100 NVL's CC-off pinned fit (43.49 / 42.17 GB/s,
  // PCIe Gen5) stands in; 330 us a crossing (Phala, arXiv 2606.23969); H100's launch increment. The
  // encrypted NVLink: 510 GB/s in a confidential VM (same paper), its set-up per transfer unpublished:
  // H100 CC's added fixed cost of a queued copy at each end (pinned row).
  const CcCosts pinned = h100_row(CcHardware::H100Pinned);
  CcCosts c{.hardware = CcHardware::Blackwell,
            .d2h_gbps = 42.17 * 0.211,
            .h2d_gbps = 43.49 * 0.203,
            .d2h_fixed_us = 330,
            .h2d_fixed_us = 330,
            .launch_us = pinned.launch_us,
            .launch_extra_us = pinned.launch_extra_us,
            .peer = {.path = PeerPath::EncryptedNvlink,
                     .sender_us = pinned.d2h_fixed_us,
                     .receiver_us = pinned.h2d_fixed_us,
                     .d2h_gbps = 0,
                     .h2d_gbps = 0,
                     .link_gbps = 510},
            .peer_between = {},
            .node = NodeMessages::Sealed,
            .source = "arXiv 2606.23969"};
  // NVLink encryption ends at the node: a message to another node crosses the host bridge's bounce
  // buffers at each end, as H100 CC's does (Note [CC hardware costs]).
  c.peer_between = host_bounce(c);
  return c;
}

// H100 Protected PCIe (NVIDIA's PPCIe verifier documentation): the node's GPUs in one CVM with NVLink in
// clear (Note [Messages inside a node]); what leaves the node crosses the bounce buffers as on H100 CC
// (ISPASS 2025's pinned row: PPCIe's host path is the same driver's).
CcCosts ppcie_row() {
  CcCosts c = h100_row(CcHardware::H100Pinned);
  c.hardware = CcHardware::H100Ppcie;
  c.node = NodeMessages::Clear;
  c.source = "NVIDIA PPCIe guide; ISPASS 2025";
  return c;
}

// A row that charges none of CC's copies or launches.
CcCosts no_costs(CcHardware h, PeerWire peer, NodeMessages node, const char* source) {
  return {.hardware = h,
          .d2h_gbps = 0,
          .h2d_gbps = 0,
          .d2h_fixed_us = 0,
          .h2d_fixed_us = 0,
          .launch_us = 0,
          .launch_extra_us = 0,
          .peer = peer,
          .peer_between = peer,
          .node = node,
          .source = source};
}

}  // namespace

CcCosts cc_costs(CcHardware h) {
  switch (h) {
    case CcHardware::None:
      // CC's costs left out, but fast's ciphertext still crosses H100 CC's bounce buffers (the
      // default platform has no other path), each byte at a host core's AES pass: Note [CC hardware costs].
      return no_costs(h,
                      {.path = PeerPath::HostBounce,
                       .sender_us = 0,
                       .receiver_us = 0,
                       .d2h_gbps = kIspassHostAeadGbps,
                       .h2d_gbps = kIspassHostAeadGbps,
                       .link_gbps = 0},
                      NodeMessages::Sealed, "ISPASS 2025");
    case CcHardware::H100Pinned:
    case CcHardware::H100Pageable:
      return h100_row(h);
    case CcHardware::H100Ppcie:
      return ppcie_row();
    case CcHardware::Blackwell:
      return blackwell_row();
    case CcHardware::DirectWhatIf:
    case CcHardware::TeeIoWhatIf:
      // No bounce buffers: fast's ciphertext at the GPU's link rate. TEE-IO (Intel TDX Connect, PCIe
      // TDISP/IDE) also leaves a node's messages to the link's encryption (Note [Messages inside a node]).
      return no_costs(h,
                      {.path = PeerPath::Direct,
                       .sender_us = 0,
                       .receiver_us = 0,
                       .d2h_gbps = 0,
                       .h2d_gbps = 0,
                       .link_gbps = 0},
                      h == CcHardware::TeeIoWhatIf ? NodeMessages::LinkEncrypted : NodeMessages::Sealed,
                      h == CcHardware::TeeIoWhatIf ? "what-if: Intel TDX Connect" : "what-if");
  }
  return {};
}

MessageRoute message_route(const CcCosts& cc, const Topology& topology, int sender, int receiver) {
  // A group message (receiver < 0) stays inside the node where every rank is on one (no --gpus-per-node,
  // or G = P): forwarded unchanged among GPUs of one CVM, it is what any other message between them is.
  const bool inside =
      receiver >= 0 ? topology.node_of(sender) == topology.node_of(receiver) : topology.one_node();
  if (inside && cc.node != NodeMessages::Sealed) return {.what = cc.node, .peer = {}, .leaves_node = false};
  const bool leaves = !inside && topology.given();
  return {.what = NodeMessages::Sealed, .peer = leaves ? cc.peer_between : cc.peer, .leaves_node = leaves};
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
                                                     {"attention_efficiency", g.attention_efficiency},
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
                                                         {"row_traffic", g.row_traffic},
                                                         {"scores_traffic", g.scores_traffic},
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

double EmulatedGpu::attention_flops_per_second() const {
  return flops_per_second() / efficiency() * spec.attention_efficiency;
}

double EmulatedGpu::fused_attention_flops_per_second() const {
  const double peak = tflops_override > 0               ? tflops_override
                      : precision == GpuPrecision::Bf16 ? spec.peak_tflops_bf16
                                                        : spec.peak_tflops_fp32;
  const double eff = fused_attention_efficiency();
  if (!(peak > 0) || !(eff > 0) || eff > 1.0) {
    throw InputError(
        "--gpu-baseline fused-attention needs a positive peak and a fused-kernel efficiency in "
        "(0, 1] (--gpu-fused-efficiency); got " +
        std::to_string(peak) + " TFLOP/s x " + std::to_string(eff));
  }
  return peak * 1e12 * eff;
}

double EmulatedGpu::elementwise_seconds(double bytes, double per_byte) const {
  const double traffic = bytes * per_byte * (precision == GpuPrecision::Bf16 ? 0.5 : 1.0);
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
  std::string out = buf;
  char more[200];
  if (baseline == GpuBaseline::FusedAttention) {
    // Note [Fused attention baseline]: the step is not teetrain's kernels', and says so.
    std::snprintf(
        more, sizeof more,
        "; baseline fused-attention (PyTorch-class: attention one kernel at %.1f TFLOP/s, fitted to "
        "PyTorch's fused GPT-2 steps)",
        fused_attention_flops_per_second() / 1e12);
    out += more;
  }
  if (cc.on()) {
    std::snprintf(more, sizeof more, "; CC mode (%s, %s): copies %.2f/%.2f GB/s + %.0f us, launches +%.2f us",
                  enum_name(cc.hardware), cc.source, cc.d2h_gbps, cc.h2d_gbps, cc.crossing_us(),
                  cc.launch_extra_us);
    out += more;
  }
  if (cc.node != NodeMessages::Sealed) {
    // Note [Messages inside a node]: the banner says which platform leaves them unsealed.
    std::snprintf(more, sizeof more, "; %s (%s): messages inside a node %s, not sealed",
                  enum_name(cc.hardware), cc.source, enum_name(cc.node));
    out += more;
  }
  if (cc.hardware == CcHardware::None && cc.peer.path == PeerPath::Direct) return out;
  // Which path GPU-sealed messages take (Note [CC hardware costs]): set for TEE runs only.
  std::snprintf(more, sizeof more, "; GPU-sealed messages cross %s", enum_name(cc.peer.path));
  if (cc.peer.crosses())
    std::snprintf(more + std::strlen(more), sizeof more - std::strlen(more), " (+%.1f us each end)",
                  cc.peer.toll_us());
  out += more;
  return out;
}

}  // namespace tt
