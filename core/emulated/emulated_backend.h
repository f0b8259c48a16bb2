// EmulatedBackend: a GPU that exists only as time. Every op of the Backend interface is a wait
// computed from its shape arguments on an EmulatedGpu (emulated_gpu.h) — matmuls and attention
// products at the tensor cores' measured share of peak, convolutions at cuDNN's, element-wise ops
// from the bytes they move at HBM bandwidth, the optimizers at theirs — queued on an emulated stream
// as a real GPU queues kernels. The real models (Gpt2, Resnet) and optimizers run on it unchanged,
// so every model family can be emulated, and a study's compute side comes from the same code path
// as a real run's.
//
// What is real: the op sequence, the shapes, the parameter table, when each gradient bucket becomes
// final (the host waits for the stream before handing a bucket on: publish()), and every byte the
// communication side touches. What is not: values. Memory is AliasedMemory (one shared block of
// zeros per backend), host-to-device copies and fills are costs only, and the reductions returned to
// the host (the loss, the gradient norm) read 0. An emulated run's parameters never change, so it
// cannot be checkpointed or sampled (the run plan refuses both).
//
// Streams: ops called on the thread that built the backend (the training thread) run on the compute
// stream, which the host may run up to 2 ms ahead of, as it runs ahead of a real GPU's launch queue.
// Ops called on any other thread (DDP's communication thread: the 1/P average of each bucket) run on
// comm_stream(), with the communication side's other GPU work (device AES-GCM, the ring's adds): as
// on a real GPU, where DDP's communication stream overlaps with compute.
#pragma once
#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/emulated/aliased_memory.h"
#include "core/emulated/emulated_gpu.h"
#include "core/emulated/gpu_queue.h"
#include "core/emulated/sm_share.h"
#include "core/run_clock.h"

namespace tt {

// The kinds of work an emulated op is charged as (each has its own rate): Note [Transformer kernel model].
enum class EmulatedWork {
  Matmul,       // the projections' GEMMs: FLOPs at the matmul efficiency
  Attention,    // attention's batched (T x hs) x (hs x T) GEMMs: FLOPs at their own efficiency
  Conv,         // convolutions' implicit GEMMs
  Elementwise,  // element-wise kernels outside the transformer's ops (and ResNet's): bytes
  Rows,         // the transformer's row-wise kernels: bytes
  Scores,       // attention's materialised (B, NH, T, T) tensors, read and written: bytes
  Launches,     // the transformer's kernel launches: a fixed cost each
  Optimizer,
  Transfer,
  FusedAttention  // --gpu-baseline fused-attention's one kernel: FLOPs (Note [Fused attention baseline])
};
inline constexpr std::size_t kEmulatedWorkKinds = 10;

// One launches() call of a transformer op (its `kernels` and the work charged with them since the
// previous call), or one plain op (kernels = 0): the unit tools/fit_gpu_kernels.py replays to test how
// a GPU's launch queue paces kernels (EmulatedBackend::log_kernels).
struct KernelGroup {
  double kernels = 0;
  std::array<double, kEmulatedWorkKinds> seconds{};  // by EmulatedWork
};
template <>
struct EnumNames<EmulatedWork> {
  static constexpr std::pair<const char*, EmulatedWork> all[] = {
      {"matmul", EmulatedWork::Matmul},     {"attention", EmulatedWork::Attention},
      {"conv", EmulatedWork::Conv},         {"elementwise", EmulatedWork::Elementwise},
      {"rows", EmulatedWork::Rows},         {"scores", EmulatedWork::Scores},
      {"launches", EmulatedWork::Launches}, {"optimizer", EmulatedWork::Optimizer},
      {"transfer", EmulatedWork::Transfer}, {"fused_attention", EmulatedWork::FusedAttention}};
};

class EmulatedBackend final : public Backend {
 public:
  // Wait: ops are waits on the emulated stream (training). Account: ops only add up their seconds
  // (tests and predictions: a whole step is costed in microseconds).
  enum class Timing { Wait, Account };
  // block_bytes: physical memory behind every allocation (AliasedMemory). clock: a virtual clock makes
  // Wait's waits computed, not slept (Note [Virtual time], run_clock.h); null or a wall clock: real waits.
  explicit EmulatedBackend(EmulatedGpu gpu, Timing timing = Timing::Wait,
                           std::size_t block_bytes = std::size_t{64} << 20, RunClock* clock = nullptr);

  DeviceKind kind() const override { return DeviceKind::Emulated; }
  std::string describe() const override;
  std::string numerics() const override { return describe(); }  // what is modelled: no values are computed
  const EmulatedGpu& gpu() const { return gpu_; }
  EmulatedGpuQueue& comm_stream() { return comm_; }
  // An HBM-bound kernel of the communication side on comm_stream(): `bytes` at full HBM bandwidth
  // (the ring's adds of received segments).
  void comm_kernel(double bytes);
  // Seconds charged so far, per kind of work and in all.
  double seconds(EmulatedWork w) const { return seconds_[static_cast<std::size_t>(w)].load(); }
  double seconds() const;
  void reset_seconds();
  // Transformer kernel launches (EmulatedWork::Launches) charged since the last reset_seconds().
  long kernels() const { return kernels_.load(); }
  // Of seconds(), what the GPU's CC mode added since the last reset_seconds() (Note [CC hardware
  // costs], emulated_gpu.h): kernel launches, and host <-> device copies through the bounce buffers.
  double cc_launch_seconds() const { return cc_launch_s_.load(); }
  double cc_copy_seconds() const { return cc_copy_s_.load(); }
  // The communication side's AES-GCM kernels held the SMs over [begin, end): Note [GPU crypto shares the
  // SMs]. Ignored from the training thread (its own time already holds its work) and in wall-clock time.
  void lend_sms(RunClock::TimePoint begin, RunClock::TimePoint end);
  // Seconds the compute stream waited for them, in all (virtual time).
  double sm_wait_seconds() const { return sm_wait_s_.load(); }
  // Appends the shape of every convolution forward to `log` from now on (null: stop): a model's
  // layers as its forward calls them (`teetrain bench conv`).
  void log_convs(std::vector<Conv2dShape>* log) { conv_log_ = log; }
  // Appends every kernel group the training thread charges to `log` from now on (null: stop).
  void log_kernels(std::vector<KernelGroup>* log) { kernel_log_ = log; }

  void* allocate(std::size_t bytes) override { return memory_.allocate(bytes); }
  void deallocate(void* p) noexcept override { memory_.deallocate(p); }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill(float* x, float value, std::size_t n) override;
  void synchronize() override;
  void publish() override { synchronize(); }
  // The compute stream pays for the SMs lent since the last call: on the training thread, once a
  // step's gradients are averaged (Note [GPU crypto shares the SMs]).
  void settle_shared_units();

  void add(float* out, const float* a, const float* b, std::size_t n) override;
  void accumulate(float* dst, const float* src, std::size_t n) override;
  void scale(float* x, float alpha, std::size_t n) override;
  double sum_squares(const float* x, std::size_t n) override;
  double mean(const float* x, std::size_t n) override;

  void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                        int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override;
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC,
                      int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int IC, int OC) override;
  void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                         AttentionMask mask) override;
  void attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH, AttentionMask mask) override;
  void add_bias(float* x, const float* bias, int N, int C) override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                        const float* rstd, int N, int C) override;
  void rope_forward(float* x, int B, int T, int row_floats, int heads, int HS, float base) override;
  void rope_backward(float* dx, int B, int T, int row_floats, int heads, int HS, float base) override;
  void swiglu_forward(float* out, const float* inp, int N, int F) override;
  void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) override;
  void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int NKV, int HS,
                             AttentionMask mask) override;
  void gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                              const float* att, int B, int T, int NH, int NKV, int HS,
                              AttentionMask mask) override;
  void gelu_forward(float* out, const float* inp, std::size_t n) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override;
  void softmax_xent_forward(float* losses, float* probs, const float* logits, const int32_t* targets, int N,
                            int V, int Vp) override;
  void softmax_xent_backward(float* dlogits, const float* probs, const int32_t* targets, int N, int V, int Vp,
                             float dloss) override;

  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const AdamWConfig& cfg, float grad_scale, long step) override;
  void sgd_update(float* params, const float* grads, float* momentum_buf, std::size_t n, const SgdConfig& cfg,
                  float grad_scale) override;

  std::size_t conv2d_workspace_floats(const Conv2dShape& /*s*/) const override { return 0; }
  void conv2d_forward(float* out, const float* inp, const float* weight, const float* bias, float* workspace,
                      const Conv2dShape& s) override;
  void conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, float* workspace, const Conv2dShape& s) override;
  void batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean, float* running_var,
                         const float* inp, const float* weight, const float* bias, int B, int C, int HW,
                         float momentum, float eps, bool training) override;
  void batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int B, int C,
                          int HW) override;
  void relu_forward(float* out, const float* inp, std::size_t n) override;
  void relu_backward(float* dinp, const float* x, const float* dout, std::size_t n) override;
  void maxpool2d_forward(float* out, int32_t* argmax, const float* inp, const Pool2dShape& s) override;
  void maxpool2d_backward(float* dinp, const float* dout, const int32_t* argmax,
                          const Pool2dShape& s) override;
  void avgpool2d_forward(float* out, const float* inp, const Pool2dShape& s) override;
  void avgpool2d_backward(float* dinp, const float* dout, const Pool2dShape& s) override;
  void global_avgpool_forward(float* out, const float* inp, int B, int C, int HW) override;
  void global_avgpool_backward(float* dinp, const float* dout, int B, int C, int HW) override;

 private:
  // Plain: one kernel, whose launch only CC prices (element-wise and CNN ops, as fitted on ResNet).
  // Counted: part of a transformer op, whose kernels launches() charges.
  // ToDevice, ToHost: a copy (EmulatedWork::Transfer) and its direction, which CC prices apart.
  enum class Launch { Plain, Counted, ToDevice, ToHost };
  // Charges `amount` of one kind of work: FLOPs for Matmul, Attention and Conv, bytes for the others.
  void charge(EmulatedWork w, double amount, Launch launch = Launch::Plain);
  // Charges `kernels` launches of a transformer op (EmulatedWork::Launches): the fixed cost of each
  // (GpuSpec::row_kernel_seconds) and, in CC mode, what CC adds to one launch (charge()).
  void launches(double kernels);
  // Adds a charge to the kernel group being logged (log_kernels); any charge but a Counted one closes it.
  void log_kernel_work(EmulatedWork w, double amount, Launch launch, double s);
  double channel_parallel(int C) const;
  void charge_elementwise_floats(double floats) { charge(EmulatedWork::Elementwise, floats * sizeof(float)); }
  // A transformer op's row-wise traffic and its `kernels` launches.
  void charge_row_floats(double floats, double kernels = 1) {
    charge(EmulatedWork::Rows, floats * sizeof(float), Launch::Counted);
    launches(kernels);
  }

  EmulatedGpu gpu_;
  Timing timing_;
  bool virtual_time_;
  double matmul_flops_per_s_;
  double attention_flops_per_s_;
  double fused_flops_per_s_;  // 0 unless the baseline is fused-attention
  double conv_flops_per_s_;
  AliasedMemory memory_;
  EmulatedGpuQueue compute_;
  EmulatedGpuQueue comm_;
  std::thread::id compute_thread_ = std::this_thread::get_id();
  std::array<std::atomic<double>, kEmulatedWorkKinds> seconds_{};
  std::atomic<long> kernels_{0};  // the comm thread charges too
  std::atomic<double> cc_launch_s_{0}, cc_copy_s_{0};
  std::vector<Conv2dShape>* conv_log_ = nullptr;
  std::vector<KernelGroup>* kernel_log_ = nullptr;
  KernelGroup pending_{};  // a transformer op's work charged since its last launches() (kernel_log_ only)
  RunClock* clock_;  // the run's clock (virtual time: where settle_shared_units moves the compute thread)
  SmShare sms_;
  std::atomic<double> sm_wait_s_{0};
};

}  // namespace tt
