#include "core/emulated/emulated_backend.h"

#include <algorithm>
#include <cstring>

namespace tt {
namespace {
// Host <-> device copies: a PCIe Gen5 x16 link moves ~50 GB/s in theory; pageable copies of a few
// hundred KiB (a batch of tokens or images) reach about half.
constexpr double kPcieBytesPerSecond = 25e9;
constexpr double kFloat = sizeof(float);

double d(std::size_t n) {
  return static_cast<double>(n);
}
double d(int n) {
  return static_cast<double>(n);
}
// The share of the (T, T) blocks a fused attention kernel computes (Note [Fused attention baseline]).
double unmasked_share(AttentionMask mask) {
  return mask == AttentionMask::Causal ? 0.5 : 1.0;
}
}  // namespace

EmulatedBackend::EmulatedBackend(EmulatedGpu gpu, Timing timing, std::size_t block_bytes, RunClock* clock)
    : gpu_(std::move(gpu)),
      timing_(timing),
      virtual_time_(clock != nullptr && clock->is_virtual()),
      matmul_flops_per_s_(gpu_.flops_per_second()),  // validates the GPU settings before the run starts
      attention_flops_per_s_(gpu_.attention_flops_per_second()),
      fused_flops_per_s_(
          gpu_.baseline == GpuBaseline::FusedAttention ? gpu_.fused_attention_flops_per_second() : 0.0),
      conv_flops_per_s_(gpu_.conv_flops_per_second()),
      memory_(block_bytes),
      compute_(std::chrono::milliseconds(2), clock),
      comm_(std::chrono::microseconds(50), clock),
      clock_(clock) {}

std::string EmulatedBackend::describe() const {
  return "emulated GPU: " + gpu_.describe() +
         (virtual_time_ ? " (ops advance virtual time" : " (ops are waits") + "; memory aliased onto " +
         std::to_string(memory_.block_bytes() >> 20) + " MiB)";
}

double EmulatedBackend::seconds() const {
  double s = 0;
  for (const auto& w : seconds_) s += w.load();
  return s;
}

void EmulatedBackend::reset_seconds() {
  for (auto& w : seconds_) w.store(0.0);
  kernels_.store(0);
  cc_launch_s_.store(0.0);
  cc_copy_s_.store(0.0);
}

void EmulatedBackend::charge(EmulatedWork w, double amount, Launch launch) {
  double s = 0;
  switch (w) {
    case EmulatedWork::Matmul:
      s = amount / matmul_flops_per_s_;
      break;
    case EmulatedWork::Attention:
      s = amount / attention_flops_per_s_;
      break;
    case EmulatedWork::Conv:
      s = amount / conv_flops_per_s_;
      break;
    case EmulatedWork::FusedAttention:
      s = amount / fused_flops_per_s_;
      break;
    case EmulatedWork::Elementwise:
      s = gpu_.elementwise_seconds(amount);
      break;
    case EmulatedWork::Rows:
      s = gpu_.elementwise_seconds(amount, gpu_.row_traffic());
      break;
    case EmulatedWork::Scores:
      s = gpu_.elementwise_seconds(amount, gpu_.scores_traffic());
      break;
    case EmulatedWork::Launches:
      s = amount * gpu_.spec.row_kernel_seconds;
      break;
    case EmulatedWork::Optimizer:
      s = gpu_.optimizer_seconds(amount);
      break;
    case EmulatedWork::Transfer:
      // In CC mode through the bounce buffers (the charge below), else over plain PCIe.
      s = gpu_.cc.on() ? 0.0 : amount / kPcieBytesPerSecond;
      break;
  }
  // Note [CC hardware costs] (emulated_gpu.h): every copy goes through the bounce buffers at CC's
  // measured rate, every other op's launch is dearer: once per op (and per launches() call of a
  // transformer op), not per kernel, since the GPU, not the launches, paces an op's queued kernels.
  if (gpu_.cc.on() && launch != Launch::Counted) {
    const bool copy = w == EmulatedWork::Transfer;
    const double cc =
        copy ? gpu_.cc.copy_seconds(launch == Launch::ToDevice, amount) : gpu_.cc.launch_extra_us * 1e-6;
    (copy ? cc_copy_s_ : cc_launch_s_).fetch_add(cc);
    s += cc;
  }
  seconds_[static_cast<std::size_t>(w)].fetch_add(s);
  if (w == EmulatedWork::Launches) kernels_.fetch_add(static_cast<long>(amount));
  log_kernel_work(w, amount, launch, s);
  if (timing_ == Timing::Wait) (std::this_thread::get_id() == compute_thread_ ? compute_ : comm_).run(s);
}

void EmulatedBackend::log_kernel_work(EmulatedWork w, double amount, Launch launch, double s) {
  if (kernel_log_ == nullptr || std::this_thread::get_id() != compute_thread_) return;
  pending_.seconds[static_cast<std::size_t>(w)] += s;
  if (w == EmulatedWork::Launches) pending_.kernels = amount;
  if (launch == Launch::Counted) return;  // the op's launches() closes its group
  kernel_log_->push_back(pending_);
  pending_ = {};
}

void EmulatedBackend::launches(double kernels) {
  if (kernels > 0) charge(EmulatedWork::Launches, kernels);
}

void EmulatedBackend::comm_kernel(double bytes) {
  const double s = bytes / (gpu_.spec.hbm_gbps * 1e9);
  if (timing_ == Timing::Wait) comm_.run(s);
}

void EmulatedBackend::lend_sms(RunClock::TimePoint begin, RunClock::TimePoint end) {
  if (virtual_time_ && std::this_thread::get_id() != compute_thread_) sms_.lend(begin, end);
}

// Note [GPU crypto shares the SMs] (sm_share.h).
void EmulatedBackend::settle_shared_units() {
  if (!virtual_time_) return;
  const double s = sms_.settle(clock_->now());
  clock_->elapse(s);
  sm_wait_s_.fetch_add(s);
}

void EmulatedBackend::synchronize() {
  if (timing_ == Timing::Wait) compute_.wait();
}

// ---- memory: the block must keep holding zeros (aliased_memory.h), so only copies to the host move
// data; the rest are costs.
void EmulatedBackend::copy_to_device(void* /*dst*/, const void* /*host_src*/, std::size_t bytes) {
  charge(EmulatedWork::Transfer, d(bytes), Launch::ToDevice);
}
void EmulatedBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  charge(EmulatedWork::Transfer, d(bytes), Launch::ToHost);
  synchronize();
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
}
void EmulatedBackend::copy(void* /*dst*/, const void* /*src*/, std::size_t bytes) {
  charge(EmulatedWork::Elementwise, 2.0 * d(bytes));
}
void EmulatedBackend::fill(float* /*x*/, float /*value*/, std::size_t n) {
  charge_elementwise_floats(d(n));
}

// ---- element-wise and reductions: floats read plus floats written.
void EmulatedBackend::add(float*, const float*, const float*, std::size_t n) {
  charge_elementwise_floats(3.0 * d(n));
}
void EmulatedBackend::accumulate(float*, const float*, std::size_t n) {
  charge_elementwise_floats(3.0 * d(n));
}
void EmulatedBackend::scale(float*, float, std::size_t n) {
  charge_elementwise_floats(2.0 * d(n));
}
double EmulatedBackend::sum_squares(const float*, std::size_t n) {
  charge_elementwise_floats(d(n));
  synchronize();
  return 0.0;
}
double EmulatedBackend::mean(const float*, std::size_t n) {
  charge_elementwise_floats(d(n));
  synchronize();
  return 0.0;
}

// ---- transformer ops (N = B*T rows of C): Note [Transformer kernel model] (emulated_gpu.h). Each op is
// charged its kernels as the CUDA backend launches them (core/cuda/cuda_ops_*.cu), its GEMMs' FLOPs and
// the floats its row-wise kernels read and write.
void EmulatedBackend::encoder_forward(float*, const int32_t*, const float*, const float* wpe, int B, int T,
                                      int C) {
  charge_row_floats((wpe != nullptr ? 3.0 : 2.0) * d(B) * d(T) * d(C));  // rows gathered, one written
}
void EmulatedBackend::encoder_backward(float*, float*, const float*, const int32_t*, int B, int T, int C) {
  // dout read, two rows read-modify-written; dwpe, the positions, their sort by token (counted as one), dwte.
  charge_row_floats(5.0 * d(B) * d(T) * d(C), 4);
}
void EmulatedBackend::layernorm_forward(float*, float*, float*, const float*, const float*, const float*,
                                        int N, int C) {
  charge_row_floats(2.0 * d(N) * d(C) + 2.0 * d(N));
}
void EmulatedBackend::layernorm_backward(float*, float*, float*, const float*, const float*, const float*,
                                         const float*, const float*, int N, int C) {
  // dout and inp read, dinp read-modify-written; dinp, then the weights' partial and final sums.
  charge_row_floats(4.0 * d(N) * d(C), 3);
}
void EmulatedBackend::matmul_forward(float*, const float*, const float*, const float* bias, int N, int IC,
                                     int OC) {
  charge(EmulatedWork::Matmul, 2.0 * d(N) * d(IC) * d(OC), Launch::Counted);
  launches(1);
  if (bias != nullptr) charge_row_floats(2.0 * d(N) * d(OC));  // broadcast, then read by the GEMM
}
void EmulatedBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float*, const float*,
                                      const float*, int N, int IC, int OC) {
  const double one = 2.0 * d(N) * d(IC) * d(OC);
  const double gemms = (dinp != nullptr ? 1.0 : 0.0) + (dweight != nullptr ? 1.0 : 0.0);
  charge(EmulatedWork::Matmul, gemms * one, Launch::Counted);
  launches(gemms);
  if (dbias != nullptr) charge_row_floats(d(N) * d(OC), 2);  // column sums: partial, final
}
// Our CUDA attention runs Q K^T and att V as cuBLAS batched gemms, one call per sequence and query head
// of a group (core/cuda/cuda_ops_attention.cu: 2 B G forward, 4 B G backward, G = NH / NKV), each
// batching the NKV groups' (T x HS) x (HS x T) products, and materialises the (B, NH, T, T) matrices:
// forward writes the scores, softmax reads and writes them, att V reads them (4 passes); backward makes
// 7 passes (datt written, read by softmax backward which writes dscores, read twice by the dq and dk
// gemms; att read twice). Rows: forward reads qkv (B, T, (NH + 2 NKV) HS) and writes out (B, T, NH HS);
// backward reads qkv and dout and read-modify-writes dqkv.
// Both masks cost the same: the CUDA backend computes the full (T, T) scores either way.
void EmulatedBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                        AttentionMask mask) {
  gqa_attention_forward(out, att, qkv, B, T, NH, NH, C / NH, mask);
}
void EmulatedBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                                         const float* att, int B, int T, int C, int NH, AttentionMask mask) {
  gqa_attention_backward(dqkv, datt, dout, qkv, att, B, T, NH, NH, C / NH, mask);
}
// Note [Fused attention baseline] (emulated_gpu.h): one kernel's FLOPs over the blocks a causal mask
// leaves, the same rows, 2 launches forward and 3 backward.
void EmulatedBackend::gqa_attention_forward(float*, float*, const float*, int B, int T, int NH, int NKV,
                                            int HS, AttentionMask mask) {
  const double N = d(B) * d(T);
  const double qkv = d(NH + 2 * NKV) * d(HS);
  if (gpu_.baseline == GpuBaseline::FusedAttention) {
    charge(EmulatedWork::FusedAttention, 4.0 * N * d(T) * d(NH) * d(HS) * unmasked_share(mask),
           Launch::Counted);
    charge_row_floats(N * (qkv + d(NH) * d(HS)), 2);
    return;
  }
  charge(EmulatedWork::Attention, 4.0 * N * d(T) * d(NH) * d(HS), Launch::Counted);
  charge(EmulatedWork::Scores, 4.0 * d(B) * d(NH) * d(T) * d(T) * kFloat, Launch::Counted);
  launches(2.0 * d(B) * d(NH / NKV));  // the batched gemms; the softmax is charge_row_floats' launch
  charge_row_floats(N * (qkv + d(NH) * d(HS)));
}
void EmulatedBackend::gqa_attention_backward(float*, float*, const float*, const float*, const float*, int B,
                                             int T, int NH, int NKV, int HS, AttentionMask mask) {
  const double N = d(B) * d(T);
  const double qkv = d(NH + 2 * NKV) * d(HS);
  if (gpu_.baseline == GpuBaseline::FusedAttention) {
    charge(EmulatedWork::FusedAttention, 10.0 * N * d(T) * d(NH) * d(HS) * unmasked_share(mask),
           Launch::Counted);
    charge_row_floats(N * (3.0 * qkv + d(NH) * d(HS)), 3);
    return;
  }
  charge(EmulatedWork::Attention, 8.0 * N * d(T) * d(NH) * d(HS), Launch::Counted);
  charge(EmulatedWork::Scores, 7.0 * d(B) * d(NH) * d(T) * d(T) * kFloat, Launch::Counted);
  launches(4.0 * d(B) * d(NH / NKV));
  charge_row_floats(N * (3.0 * qkv + d(NH) * d(HS)));
}
// Llama's row kernels, by the floats they move as the kernels above: RMSNorm as layernorm (one statistic
// per row instead of two), rotary embeddings read and write their heads in place, SwiGLU reads gate and
// up and writes their product (backward: reads both and dout, read-modify-writes dgate and dup).
void EmulatedBackend::rmsnorm_forward(float*, float*, const float*, const float*, int N, int C, float) {
  charge_row_floats(2.0 * d(N) * d(C) + d(N));
}
void EmulatedBackend::rmsnorm_backward(float*, float*, const float*, const float*, const float*, const float*,
                                       int N, int C) {
  charge_row_floats(4.0 * d(N) * d(C), 3);  // as layernorm_backward
}
void EmulatedBackend::rope_forward(float*, int B, int T, int, int heads, int HS, float) {
  charge_row_floats(2.0 * d(B) * d(T) * d(heads) * d(HS));
}
void EmulatedBackend::rope_backward(float*, int B, int T, int, int heads, int HS, float) {
  charge_row_floats(2.0 * d(B) * d(T) * d(heads) * d(HS));
}
void EmulatedBackend::swiglu_forward(float*, const float*, int N, int F) {
  charge_row_floats(3.0 * d(N) * d(F));
}
void EmulatedBackend::swiglu_backward(float*, const float*, const float*, int N, int F) {
  charge_row_floats(7.0 * d(N) * d(F));
}
void EmulatedBackend::add_bias(float*, const float*, int N, int C) {
  charge_row_floats(2.0 * d(N) * d(C));  // x read-modify-written
}
void EmulatedBackend::gelu_forward(float*, const float*, std::size_t n) {
  charge_row_floats(2.0 * d(n));
}
void EmulatedBackend::gelu_backward(float*, const float*, const float*, std::size_t n) {
  charge_row_floats(4.0 * d(n));
}
void EmulatedBackend::softmax_xent_forward(float*, float*, const float*, const int32_t*, int N, int /*V*/,
                                           int Vp) {
  charge_row_floats(2.0 * d(N) * d(Vp));
}
void EmulatedBackend::softmax_xent_backward(float*, const float*, const int32_t*, int N, int /*V*/, int Vp,
                                            float) {
  charge_row_floats(3.0 * d(N) * d(Vp));
}

// ---- optimizers: fused kernels streaming their state in FP32.
void EmulatedBackend::adamw_update(float*, const float*, float*, float*, std::size_t n, const AdamWConfig&,
                                   float, long) {
  charge(EmulatedWork::Optimizer, 28.0 * d(n));  // reads p, g, m, v; writes p, m, v
}
void EmulatedBackend::sgd_update(float*, const float*, float*, std::size_t n, const SgdConfig& cfg, float) {
  charge(EmulatedWork::Optimizer,
         (cfg.momentum != 0.0f ? 20.0 : 12.0) * d(n));  // p, g (, buf) read; p (, buf) written
}

// ---- CNN ops.
// A convolution as cuDNN's implicit GEMMs: forward M = B*OH*OW output pixels, N = OC, K = IC*KH*KW;
// the input gradient M = B*H*W, N = IC (K shrinks by the stride squared: same FLOPs as forward); the
// weight gradient M = OC, N = IC*KH*KW, K = B*OH*OW. Their shapes decide the tiles they fill.
void EmulatedBackend::conv2d_forward(float*, const float*, const float*, const float* bias, float*,
                                     const Conv2dShape& s) {
  if (conv_log_ != nullptr) conv_log_->push_back(s);
  const double pixels = d(s.B) * d(s.OH()) * d(s.OW()), taps = d(s.IC) * d(s.KH) * d(s.KW);
  charge(EmulatedWork::Conv, gpu_.conv_gemm_flops(pixels, d(s.OC), taps));
  if (bias != nullptr) charge_elementwise_floats(2.0 * pixels * d(s.OC));
}
void EmulatedBackend::conv2d_backward(float* dinp, float* dweight, float* dbias, const float*, const float*,
                                      const float*, float*, const Conv2dShape& s) {
  const double pixels = d(s.B) * d(s.OH()) * d(s.OW()), taps = d(s.IC) * d(s.KH) * d(s.KW);
  const double in_pixels = d(s.B) * d(s.H) * d(s.W);
  const double dgrad_k = pixels * d(s.OC) * taps / (in_pixels * d(s.IC));
  double flops = 0;
  if (dinp != nullptr) flops += gpu_.conv_gemm_flops(in_pixels, d(s.IC), dgrad_k);
  if (dweight != nullptr) flops += gpu_.conv_gemm_flops(d(s.OC), taps, pixels);
  charge(EmulatedWork::Conv, flops);
  if (dbias != nullptr) charge_elementwise_floats(pixels * d(s.OC));
}
// Our CUDA batch norm runs one block per channel: with fewer channels than SMs, the rest idle.
double EmulatedBackend::channel_parallel(int C) const {
  return std::min(1.0, d(C) / d(std::max(1, gpu_.spec.sms)));
}
void EmulatedBackend::batchnorm_forward(float*, float*, float*, float*, float*, const float*, const float*,
                                        const float*, int B, int C, int HW, float, float, bool training) {
  // Training reads the input twice (statistics, then normalisation) and writes the output.
  charge_elementwise_floats((training ? 3.0 : 2.0) * d(B) * d(C) * d(HW) / channel_parallel(C));
}
void EmulatedBackend::batchnorm_backward(float*, float*, float*, const float*, const float*, const float*,
                                         const float*, const float*, int B, int C, int HW) {
  // Two passes: the per-channel sums read dout and inp; then dinp reads both again and is updated.
  charge_elementwise_floats(6.0 * d(B) * d(C) * d(HW) / channel_parallel(C));
}
void EmulatedBackend::relu_forward(float*, const float*, std::size_t n) {
  charge_elementwise_floats(2.0 * d(n));
}
void EmulatedBackend::relu_backward(float*, const float*, const float*, std::size_t n) {
  charge_elementwise_floats(4.0 * d(n));
}
void EmulatedBackend::maxpool2d_forward(float*, int32_t*, const float*, const Pool2dShape& s) {
  const double in = d(s.B) * d(s.C) * d(s.H) * d(s.W), out = d(s.B) * d(s.C) * d(s.OH()) * d(s.OW());
  charge_elementwise_floats(in + 2.0 * out);  // output and argmax written
}
void EmulatedBackend::maxpool2d_backward(float*, const float*, const int32_t*, const Pool2dShape& s) {
  const double in = d(s.B) * d(s.C) * d(s.H) * d(s.W), out = d(s.B) * d(s.C) * d(s.OH()) * d(s.OW());
  charge_elementwise_floats(2.0 * out + 2.0 * in);
}
void EmulatedBackend::avgpool2d_forward(float*, const float*, const Pool2dShape& s) {
  const double in = d(s.B) * d(s.C) * d(s.H) * d(s.W), out = d(s.B) * d(s.C) * d(s.OH()) * d(s.OW());
  charge_elementwise_floats(in + out);
}
void EmulatedBackend::avgpool2d_backward(float*, const float*, const Pool2dShape& s) {
  const double in = d(s.B) * d(s.C) * d(s.H) * d(s.W), out = d(s.B) * d(s.C) * d(s.OH()) * d(s.OW());
  charge_elementwise_floats(out + 2.0 * in);
}
void EmulatedBackend::global_avgpool_forward(float*, const float*, int B, int C, int HW) {
  charge_elementwise_floats(d(B) * d(C) * (d(HW) + 1.0));
}
void EmulatedBackend::global_avgpool_backward(float*, const float*, int B, int C, int HW) {
  charge_elementwise_floats(d(B) * d(C) * (2.0 * d(HW) + 1.0));
}

}  // namespace tt
