// The GPU an emulated run pretends to have (`--compute emulate --gpu h100`): peak rates from the
// vendors' data sheets, and the fractions of them that teetrain's own CUDA kernels reach, measured.
// EmulatedBackend (emulated_backend.h) turns every backend op into a wait computed from these.
#pragma once
#include <string>
#include <vector>

#include "core/emulated/topology.h"
#include "core/enum_names.h"

namespace tt {

// What teetrain's own CUDA kernels reach, measured (the fits are described in gpu_specs()):
// - convolutions (cuDNN at batch 32) far less than matmuls (tests/fixtures/step_h100); on tensor cores,
//   each of a convolution's implicit GEMMs also pays for the tiles its shape leaves partly empty
//   (conv_gemm_flops);
// - element-wise kernels outside the transformer's ops move kMeasuredActTraffic times the bytes of their
//   operands, at 80% of HBM;
// - the transformer's ops: Note [Transformer kernel model].
//
// Note [Transformer kernel model]: a transformer op is charged its kernels as the CUDA backend launches
// them (core/cuda/cuda_ops_*.cu), each at a fixed cost (kMeasuredRowKernelSeconds: the launch and the
// short kernel's ramp and tail), plus its work at its own shapes: the projections' GEMMs at
// kMeasuredMatmulEfficiency of the tensor-core peak; attention's batched (T x hs) x (hs x T) GEMMs, 2 B G
// calls forward and 4 B G backward (G query heads per key/value head), at kMeasuredAttentionEfficiency;
// the row-wise kernels' floats (layernorm, GELU, bias, softmax over the vocabulary, attention's q, k, v
// and output rows) at kMeasuredRowTraffic bytes per operand byte, and the materialised (B, NH, T, T)
// scores, read and written 4 times forward and 7 backward, at kMeasuredScoresTraffic, both at 80% of
// HBM. The five constants are one linear least-squares fit (tools/fit_gpu_kernels.py, which prints them
// and the per-family table) of the forward and backward passes of GPT-2 (124M) TF32 and FP32 on an H200
// at 1,024 to 8,192 tokens per step (tests/fixtures/gpu_token_sweep_h200) and of the GPT-2 size sweep at
// 4 x 1024 (gpu_size_sweep_h200); every other transformer fixture is held out. Row traffic below 1 is
// the H200's 50 MB L2 serving what a GEMM just wrote; the scores' above 1 is the softmax's strided rows
// and the GEMMs re-reading them. `bench emulated-step` reports each term per pass (forward_work,
// backward_work), which is what the fit reads.
inline constexpr double kMeasuredMatmulEfficiency = 0.717;
inline constexpr double kMeasuredAttentionEfficiency = 0.919;
inline constexpr double kMeasuredRowKernelSeconds = 11.5e-6;
inline constexpr double kMeasuredRowTraffic = 0.498;
inline constexpr double kMeasuredScoresTraffic = 1.87;
inline constexpr double kMeasuredConvEfficiency = 0.128;     // tensor cores (TF32, BF16), of full tiles
inline constexpr double kMeasuredConvEfficiencyFp32 = 0.21;  // CUDA cores (exact FP32)
inline constexpr double kMeasuredActTraffic = 1.19;
// Note [Fused attention baseline]: which TEE-off step an emulated GPU models (--gpu-baseline). `teetrain`
// is teetrain's own CUDA kernels (Note [Transformer kernel model]), within 4-13% of PyTorch's eager step
// on the GPUs measured (docs/benchmarks.md, "GPU: gpt2 step against PyTorch"). `fused-attention` is the
// PyTorch-class step the published studies ran: the same kernels except attention, which is one fused
// kernel forward and one backward as PyTorch's scaled_dot_product_attention runs it, with no (B, NH,
// T, T) tensor in memory. In FP32 and TF32 PyTorch picks its memory-efficient kernel, which computes in
// FP32 on the CUDA cores whatever the TF32 switch says, and skips the blocks a causal mask hides; so it is
// charged the FLOPs of Q K^T and att V (forward; backward recomputes Q K^T and makes dV, dP, dQ and dK:
// 2.5x) over the unmasked half of the (T, T) blocks under a causal mask, at kMeasuredFusedAttention
// Efficiency of the FP32 peak (in BF16: of the BF16 tensor-core peak, which no measurement has checked),
// with the rows it reads and writes as before and 2 launches forward (the kernel, the output's permute)
// and 3 backward (dout . out row sums, the kernel, dqkv's permute). The efficiency is one least-squares
// fit (tools/fit_fused_attention.py) of what PyTorch 2.11's fused step saves over its eager step on an
// H200, GPT-2 (124M) at 8 x 1024, TF32 and FP32 (tests/fixtures/pytorch_attention_gpu); the H100's two
// steps are held out, and their savings are predicted within 4% (docs/reproducing.md, "The TEE-off
// baseline").
inline constexpr double kMeasuredFusedAttentionEfficiency = 0.515;
enum class GpuBaseline { Teetrain, FusedAttention };
template <>
struct EnumNames<GpuBaseline> {
  static constexpr std::pair<const char*, GpuBaseline> all[] = {
      {"teetrain", GpuBaseline::Teetrain}, {"fused-attention", GpuBaseline::FusedAttention}};
};

// The output tile of Hopper's tensor-core GEMM kernels (CUTLASS's sm90 TF32/BF16 tile: 128 rows of M by
// 256 columns of N). A GEMM dimension that is not a multiple of it computes the empty part of its last
// tile: ResNet's 64-channel layers fill a quarter of the N tile. Not fitted (see gpu_specs()).
inline constexpr double kTensorTileM = 128, kTensorTileN = 256;

// Which peak applies: exact FP32 on CUDA cores, TF32 tensor cores (what teetrain's CUDA backend runs
// with --tf32), or BF16 mixed precision (which also halves the element-wise bytes).
enum class GpuPrecision { Fp32, Tf32, Bf16 };
template <>
struct EnumNames<GpuPrecision> {
  static constexpr std::pair<const char*, GpuPrecision> all[] = {
      {"fp32", GpuPrecision::Fp32}, {"tf32", GpuPrecision::Tf32}, {"bf16", GpuPrecision::Bf16}};
};

// Note [CC hardware costs]: what a GPU in confidential-computing mode costs beyond the same GPU with CC
// off, as measured on an H100 NVL with Intel TDX (Yang, Sonji, Jog, ISPASS 2025 artifact:
// tools/calibration/h100_cc_sources.json and h100_cc_bandwidth_ispass25.csv; docs/reference/
// published-numbers.md). Every host <-> device copy goes through bounce buffers the driver encrypts:
// bandwidthTest's CC plateaus are 2.52-2.93 GB/s (pinned: 100 queued copies; pageable: one synchronous
// copy), and CC adds 20-37 us to each copy's fixed cost; a kernel launch takes 9.98 us instead of 4.93.
// An emulated run charges them where they happen (`--cc-hardware`, applied only to TEE runs: the TEE-off
// baseline is the same GPU with CC off): the batch's copy to the GPU (the ingress), each op's launch
// (in virtual time the host waits for each op, so the extra launch latency of its first kernel is on the
// critical path: an upper bound), and each gradient message's two crossings (platform/emulated/
// cc_transfer_channel.h). The added latency is charged once per op, not per kernel launch (Note
// [Transformer kernel model] counts an op's launches): the op's further kernels are queued behind its
// first while the GPU runs it, and at 11.5 us a kernel (more than CC's 9.98 us launch) the GPU, not the
// launches, paces the queue; a host that launched slower than the GPU ran would be charged too little.
// `blackwell` is HGX B200/B300 multi-GPU CC (tools/calibration/platforms.json, blackwell-cc): the host
// bridge's copies at 0.203x/0.211x of the CC-off rate plus 330 us each (Phala, "The Serialized Bridge",
// arXiv 2606.23969), H100's launch increment (Blackwell's is not published).
//
// One host core's AES-256-GCM, GB/s: ISPASS 2025's Emerald Rapids TDX host at 2.1 GHz
// (tools/calibration/h100_cc_sources.json, cpu_aes256gcm_gbps): the modelled host's sealing rate, and
// the rate at which `none` moves a crossing's bytes.
inline constexpr double kIspassHostAeadGbps = 3.36;

// The GPU-to-GPU path (CcCosts::peer: what `fast`'s GPU-sealed ciphertext crosses) is the platform's too.
// H100 CC has none that is encrypted (PPCIe carries NVLink in clear): the ciphertext goes device -> host
// bounce buffer -> the peer's host -> its bounce buffer -> device, two crossings per message at the
// row's copy costs. `none` leaves out CC's measured costs but not the crossings fast cannot run
// without: as on cc's host path, where the host's AES-GCM pass stands in for a crossing's copy, each
// crossing's bytes cost one host core's AES-GCM pass (kIspassHostAeadGbps) and no fixed toll. Blackwell
// encrypts NVLink on its copy engines, still through bounce buffers: 510 GB/s inside a confidential VM (arXiv
// 2606.23969) plus a set-up per transfer that is not published (assumed: H100 CC's added fixed cost of one
// queued copy at each end, 20.05 + 20.87 us). `direct-what-if` is a hypothetical GPU-to-GPU channel at the
// GPU's plain NVLink rate, with no crossings and no CC costs: no shipping GPU offers it.
//
// Multi-GPU platforms differ in what a message between two GPUs of one node is (CcCosts::node, Note
// [Messages inside a node]), and in the path fast's ciphertext takes out of a node (CcCosts::peer_between):
// Blackwell encrypts NVLink only, so a message to another node leaves through the host bridge's bounce
// buffers (its 330 us copies) and the NIC, as on H100 CC; every other row has one path for both. `h100-ppcie`
// is H100 Protected PCIe: every GPU of a node in one confidential VM, NVLink/NVSwitch carrying plaintext, so
// a message inside a node is neither sealed nor crosses a bounce buffer (it goes at NVLink rate); between
// nodes the host seals through bounce buffers as h100-pinned. `tee-io-what-if` is TDX Connect / TEE-IO with
// TDISP (not shipped): the GPUs are in the TCB, nothing crosses a bounce buffer, and a message inside a node
// is encrypted by the link (IDE) at link rate rather than sealed; between nodes the host seals, without
// crossings.
enum class CcHardware { None, H100Pinned, H100Pageable, H100Ppcie, Blackwell, DirectWhatIf, TeeIoWhatIf };
template <>
struct EnumNames<CcHardware> {
  static constexpr std::pair<const char*, CcHardware> all[] = {{"none", CcHardware::None},
                                                               {"h100-pinned", CcHardware::H100Pinned},
                                                               {"h100-pageable", CcHardware::H100Pageable},
                                                               {"h100-ppcie", CcHardware::H100Ppcie},
                                                               {"blackwell", CcHardware::Blackwell},
                                                               {"direct-what-if", CcHardware::DirectWhatIf},
                                                               {"tee-io-what-if", CcHardware::TeeIoWhatIf}};
};

// Note [Messages inside a node]: what a ring message between two GPUs of one node (core/emulated/
// topology.h; without --gpus-per-node every rank is on one node) is on a platform. Sealed: the run's
// channel seals it, with the row's crossings (every single-GPU CC row: each GPU is its own TEE). Clear
// (h100-ppcie): the node's GPUs share one CVM and NVLink carries plaintext, so the message is copied
// as it is, counted as neither sealed nor opened, crosses no bounce buffer, and an adversary on NVLink
// reads and may change it unnoticed. LinkEncrypted (tee-io-what-if): the same in the emulation, the
// link's IDE encrypting it at link rate in hardware (an adversary on the link sees ciphertext; its
// integrity is the link's, not teetrain's tag). platform/emulated/node_link_channel.h applies it;
// messages between nodes keep the run's channel either way. message_route() decides it per message.
enum class NodeMessages { Sealed, Clear, LinkEncrypted };
template <>
struct EnumNames<NodeMessages> {
  static constexpr std::pair<const char*, NodeMessages> all[] = {
      {"sealed", NodeMessages::Sealed},
      {"in clear", NodeMessages::Clear},
      {"link-encrypted", NodeMessages::LinkEncrypted}};
};

// How a GPU-sealed message reaches the next GPU under CC (Note [CC hardware costs]).
enum class PeerPath { HostBounce, EncryptedNvlink, Direct };
template <>
struct EnumNames<PeerPath> {
  static constexpr std::pair<const char*, PeerPath> all[] = {{"host bounce buffers", PeerPath::HostBounce},
                                                             {"encrypted NVLink", PeerPath::EncryptedNvlink},
                                                             {"direct (what-if)", PeerPath::Direct}};
};

// What a GPU-sealed message pays on its way to the next GPU: a crossing at each end (its fixed cost
// and, through host memory, its bytes at the copy plateau) and the link between.
struct PeerWire {
  PeerPath path = PeerPath::Direct;
  double sender_us = 0, receiver_us = 0;  // fixed cost of the crossing at each end, us
  double d2h_gbps = 0, h2d_gbps = 0;      // bytes of each crossing (0: the link alone carries them)
  double link_gbps = 0;                   // the link's rate (0: the GPU's NVLink)
  bool crosses() const { return sender_us > 0 || receiver_us > 0 || d2h_gbps > 0 || h2d_gbps > 0; }
  double toll_us() const { return (sender_us + receiver_us) / 2; }  // mean crossing
  bool operator==(const PeerWire&) const = default;
};

// One row of the CC hardware table (cc_costs()): Note [CC hardware costs].
struct CcCosts {
  CcHardware hardware = CcHardware::None;
  double d2h_gbps = 0, h2d_gbps = 0;          // CC copy plateau per direction, GB/s
  double d2h_fixed_us = 0, h2d_fixed_us = 0;  // what CC adds to one copy's fixed cost, us
  double launch_us = 0;                       // one kernel launch in CC, us
  double launch_extra_us = 0;                 // what CC adds to a launch (launch_us - the same with CC off)
  PeerWire peer{};                            // fast's GPU-to-GPU path inside a node
  PeerWire peer_between{};                    // ... and between nodes (Note [Messages inside a node])
  NodeMessages node = NodeMessages::Sealed;   // a message inside a node (Note [Messages inside a node])
  const char* source = "";                    // short citation; the URLs are in docs/reproducing.md
  // The row charges CC's copies and launches (none and direct-what-if do not).
  bool on() const { return d2h_gbps > 0; }
  // Seconds one copy of `bytes` takes through the bounce buffers (CC's fixed cost + bytes at the plateau).
  double copy_seconds(bool to_device, double bytes) const;
  // Mean of the two directions' added fixed cost: one gradient crossing's toll, us.
  double crossing_us() const { return (d2h_fixed_us + h2d_fixed_us) / 2; }
};
CcCosts cc_costs(CcHardware h);

// What one ring message from `sender` to `receiver` (< 0: a group message, for every rank) is on a
// platform (Note [Messages inside a node]): the one decision the run (platform/emulated/
// node_link_channel.h) and the cost model (engine/gradients/allreduce_selection.cpp) both take, per
// message and per hop. A group message may leave the node where there are nodes (--gpus-per-node); on
// one node it stays inside it.
struct MessageRoute {
  NodeMessages what = NodeMessages::Sealed;  // not Sealed: copied as it is, nothing crosses or is sealed
  PeerWire peer{};                           // a GPU-sealed message's path (fast), when sealed
  bool leaves_node = false;  // sealed, on the path out of a node (peer: CcCosts::peer_between)
  bool sealed() const { return what == NodeMessages::Sealed; }
};
MessageRoute message_route(const CcCosts& cc, const Topology& topology, int sender, int receiver);

// Peak dense throughput of one GPU (no structured sparsity), from the vendors' data sheets.
struct GpuSpec {
  std::string name;
  double peak_tflops_fp32 = 0;  // plain FP32 (CUDA cores)
  double peak_tflops_tf32 = 0;  // TF32 tensor cores (FP32 training with TF32 matmuls)
  double peak_tflops_bf16 = 0;  // BF16/FP16 tensor cores (mixed-precision training)
  double hbm_gbps = 0;          // memory bandwidth, GB/s (paces element-wise ops and the optimizer)
  double efficiency = kMeasuredMatmulEfficiency;  // achieved fraction of peak in the matmuls
  double act_traffic = kMeasuredActTraffic;       // HBM traffic per operand byte of element-wise ops
  double aead_gbps = 0;    // AES-256-GCM seal throughput of our CUDA kernel (0 = not measured)
  double nvlink_gbps = 0;  // GPU-to-GPU bandwidth per direction, GB/s (paces --link emulate)
  double conv_efficiency = kMeasuredConvEfficiency;           // achieved fraction of peak in convolutions
  double conv_efficiency_fp32 = kMeasuredConvEfficiencyFp32;  // the same in exact FP32
  int sms = 132;  // streaming multiprocessors (kernels with fewer blocks than this leave some idle)
  // Device memory, GiB (the data sheets' "80 GB" of HBM are 80 GiB); a run whose rank needs more is
  // refused (engine/state_memory.h). 0: not checked (a host profile that does not give it).
  double memory_gib = 0;
  double row_kernel_seconds = kMeasuredRowKernelSeconds;  // fixed cost of each transformer kernel launch
  // Note [Transformer kernel model]: attention's batched GEMMs' fraction of peak, and the HBM traffic per
  // operand byte of the transformer's row-wise kernels and of attention's (B, NH, T, T) tensors.
  double attention_efficiency = kMeasuredAttentionEfficiency;
  double row_traffic = kMeasuredRowTraffic;
  double scores_traffic = kMeasuredScoresTraffic;
  // Note [Fused attention baseline]: the fused kernel's fraction of the FP32 (BF16) peak.
  double fused_attention_efficiency = kMeasuredFusedAttentionEfficiency;
  double optimizer_gbps = 0;  // rate the fused optimizer streams its state (0 = 60% of hbm_gbps)
  // Element-wise ops whose traffic exceeds cache_bytes stream from memory at memory_gbps instead of
  // hbm_gbps (a host profile: hbm_gbps is measured at the activations' size, which stays in cache,
  // memory_gbps at the parameters' size). 0 = one rate for every size (the GPUs of the table).
  double cache_bytes = 0;
  double memory_gbps = 0;
};

// The built-in table: h100, h200, a100, v100.
std::vector<GpuSpec> gpu_specs();
// Looks `name` up (case-sensitive); throws InputError listing the known names.
GpuSpec gpu_spec(const std::string& name);
// Checks a spec read from a platform profile (engine/run/platform_profile.h): positive rates and
// efficiencies in (0, 1]; throws InputError naming the first bad field.
void validate_gpu_spec(const GpuSpec& g);

// The GPU an emulated run pretends to have, with the user's overrides applied.
struct EmulatedGpu {
  GpuSpec spec;
  GpuPrecision precision = GpuPrecision::Tf32;  // which peak column applies
  double tflops_override = 0;                   // > 0: replaces the peak (--gpu-tflops)
  double efficiency_override = 0;               // > 0: replaces the matmul efficiency (--gpu-efficiency)
  double aead_override = 0;                     // > 0: replaces the AES-GCM rate (--gpu-aead-gbps)
  double act_traffic_override = -1;  // >= 0: replaces act_traffic (--gpu-act-traffic; 0 = FLOPs only)
  CcCosts cc{};                      // the GPU in CC mode (Note [CC hardware costs]); none: CC off
  Topology topology{};               // nodes and link classes (core/emulated/topology.h)
  GpuBaseline baseline = GpuBaseline::Teetrain;  // Note [Fused attention baseline] (--gpu-baseline)
  double fused_efficiency_override = 0;          // > 0: replaces the fused kernel's (--gpu-fused-efficiency)

  // GB/s of the GPU's AES-GCM (device crypto); throws InputError when the table has no measurement.
  double aead_gbps() const;

  // Sustained matmul FLOP/s = peak x efficiency. Throws InputError for a non-positive result or an
  // efficiency above 1.
  double flops_per_second() const;
  // Sustained convolution FLOP/s = peak x conv efficiency (the matmul override scales it alike).
  double conv_flops_per_second() const;
  // Sustained FLOP/s of attention's batched GEMMs = peak x attention efficiency (the override scales it).
  double attention_flops_per_second() const;
  // Sustained FLOP/s of the fused attention kernel (Note [Fused attention baseline]): the FP32 peak (BF16:
  // the BF16 tensor-core peak; --gpu-tflops replaces either) x its efficiency.
  double fused_attention_flops_per_second() const;
  double fused_attention_efficiency() const {
    return fused_efficiency_override > 0 ? fused_efficiency_override : spec.fused_attention_efficiency;
  }
  // FLOPs a convolution's implicit GEMM (M x N output, K deep: 2 M N K FLOPs) is charged at
  // conv_flops_per_second(): on tensor cores (tf32, bf16; not with --gpu-tflops), the whole tiles of
  // kTensorTileM x kTensorTileN that cover M x N.
  double conv_gemm_flops(double M, double N, double K) const;
  double efficiency() const { return efficiency_override > 0 ? efficiency_override : spec.efficiency; }
  double act_traffic() const { return act_traffic_override >= 0 ? act_traffic_override : spec.act_traffic; }
  // The transformer's row-wise kernels' and attention scores' traffic (--gpu-act-traffic replaces both).
  double row_traffic() const { return act_traffic_override >= 0 ? act_traffic_override : spec.row_traffic; }
  double scores_traffic() const {
    return act_traffic_override >= 0 ? act_traffic_override : spec.scores_traffic;
  }
  // Seconds element-wise kernels take for `bytes` of FP32 operands (read and written): their traffic
  // at 80% of HBM bandwidth (streaming kernels), halved for bf16 (2-byte activations); above the
  // spec's cache_bytes, at memory_gbps.
  double elementwise_seconds(double bytes) const { return elementwise_seconds(bytes, act_traffic()); }
  // The same at `traffic` bytes moved per operand byte.
  double elementwise_seconds(double bytes, double traffic) const;
  // Seconds a fused optimizer kernel takes to stream `bytes` (it reached 51-65% of an H200's HBM).
  double optimizer_seconds(double bytes) const;
  std::string describe() const;  // "h100 tf32 494.7 TFLOP/s x 0.76 + element-wise x1.0 at 3350 GB/s"
};

}  // namespace tt
