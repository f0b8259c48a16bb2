// The backend interface: memory and every op the models need, on raw device buffers with explicit
// shapes. The CPU backend (OpenBLAS + threaded loops) is the reference; a CUDA backend implements
// the same calls asynchronously on a stream. Model code never dereferences a device pointer.
//
// Conventions shared by every implementation:
//  - Row-major, PyTorch layouts: a Linear weight is (OC, IC); activations are (N, C) with N = B*T.
//  - Every *_backward op ACCUMULATES (+=) into each gradient it writes, for parameters and for
//    activations alike, so that a residual branch and gradient accumulation need no special case.
//    Callers zero gradient buffers once per step (fill(..., 0)). Exception: rope_backward (in place).
//  - Results are deterministic for a given backend and thread count: reductions use a fixed
//    partition and a fixed order, never atomics, so repeated runs are bit-identical.
//  - A nullptr bias/gradient argument means "absent / not needed".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tt {

// Which keys a query may attend to: GPT-2's causal mask (keys j <= i) or BERT's full bidirectional
// attention (every key of the row; the windows carry no padding, so no key mask is needed).
enum class AttentionMask { Causal, Bidirectional };

// A target that contributes no loss and no gradient (PyTorch's ignore_index): the positions a masked
// language model does not predict.
inline constexpr int32_t kIgnoreTarget = -1;

// Emulated: a GPU that exists only as time (core/emulated/emulated_backend.h, --compute emulate).
enum class DeviceKind { Cpu, Cuda, Emulated };

struct AdamWConfig {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // decoupled (AdamW) decay, applied as p -= lr * wd * p
};

struct SgdConfig {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;  // L2 added to the gradient (PyTorch SGD semantics)
};

// Shape of one 2-D convolution (NCHW input, (OC, IC, KH, KW) weight, square stride and padding).
struct Conv2dShape {
  int B = 0, IC = 0, H = 0, W = 0;  // input (B, IC, H, W)
  int OC = 0, KH = 0, KW = 0;       // weight (OC, IC, KH, KW)
  int stride = 1, pad = 0;
  int OH() const { return (H + 2 * pad - KH) / stride + 1; }
  int OW() const { return (W + 2 * pad - KW) / stride + 1; }
};

// Shape of one 2-D pooling window (square kernel, stride and padding over an (B, C, H, W) input).
struct Pool2dShape {
  int B = 0, C = 0, H = 0, W = 0;
  int k = 1, stride = 1, pad = 0;
  int OH() const { return (H + 2 * pad - k) / stride + 1; }
  int OW() const { return (W + 2 * pad - k) / stride + 1; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual DeviceKind kind() const = 0;
  // Human-readable description, e.g. "cpu: OpenBLAS 0.3.21 Haswell, 2 threads".
  virtual std::string describe() const = 0;
  // What decides the bits of the results besides the inputs (and, on the CPU, the thread count): the
  // libraries, their versions, the kernel set picked for this machine and the precision. Never a device
  // ordinal, a memory size or a thread count, so ranks on identical hardware and software report the
  // same; ranks that report different ones compute different bits (a run's ranks agree on it first).
  virtual std::string numerics() const = 0;

  // ---- memory -------------------------------------------------------------------------------
  virtual void* allocate(std::size_t bytes) = 0;  // aligned to at least 64 bytes, zero-filled
  virtual void deallocate(void* p) noexcept = 0;
  virtual void copy_to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;  // device to device
  virtual void fill(float* x, float value, std::size_t n) = 0;
  virtual void synchronize() = 0;  // wait for all queued work
  // Called on the thread that queued work right before it hands results to another thread (DDP's
  // communication thread takes a finished gradient slice). CPU: nothing is queued. CUDA: the device
  // ring synchronises with the stream itself. Emulated: waits for its stream, so the other thread
  // never starts before the emulated GPU has finished the slice.
  virtual void publish() {}
  // x[0, n) is no longer needed and reads as anything until written again; a host backend hands the
  // whole pages inside it back to the system (a ZeRO-3 unit released: Note [Parameter units], core/model.h).
  virtual void discard(float* /*x*/, std::size_t /*n*/) {}
  // x[0, n) is about to be overwritten whole (a ZeRO-3 unit gathered); a host backend faults its
  // discarded pages in at once (Note [Pages faulted in at once], base/host_memory.h).
  virtual void prefault(float* /*x*/, std::size_t /*n*/) {}

  // ---- elementwise and reductions ---------------------------------------------------------------
  virtual void add(float* out, const float* a, const float* b, std::size_t n) = 0;  // out = a + b
  virtual void accumulate(float* dst, const float* src, std::size_t n) = 0;         // dst += src
  virtual void scale(float* x, float alpha, std::size_t n) = 0;                     // x *= alpha
  // Sum of squares, returned to the host (synchronizes). Used for gradient-norm clipping.
  virtual double sum_squares(const float* x, std::size_t n) = 0;
  // Mean of x, returned to the host (synchronizes). Used for the loss.
  virtual double mean(const float* x, std::size_t n) = 0;

  // ---- transformer ops ------------------------------------------------------------------------
  // out (B,T,C) = wte[tokens] + wpe[0..T)      tokens (B,T) int32, wte (V,C), wpe (maxT,C)
  // A null wpe (a model without learned positions: Llama) adds nothing; backward then takes a null dwpe.
  virtual void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                               int T, int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                int T, int C) = 0;

  // out (N,C) = (inp - mean) * rstd * weight + bias; mean (N), rstd (N) saved for backward. eps = 1e-5.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int N, int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean, const float* rstd,
                                  int N, int C) = 0;

  // out (N,OC) = inp (N,IC) @ weight (OC,IC)^T + bias (OC)
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                              int IC, int OC) = 0;
  // dinp (N,IC) += dout @ weight; dweight (OC,IC) += dout^T @ inp; dbias (OC) += sum_n dout
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int N, int IC, int OC) = 0;

  // Multi-head self-attention. qkv (B,T,3C) holds q, k, v side by side; out (B,T,C);
  // att (B,NH,T,T) receives the softmax probabilities (saved for backward; with the causal mask the
  // entries above the diagonal are zero). Scale 1/sqrt(C/NH).
  virtual void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                 AttentionMask mask) = 0;
  // dqkv (B,T,3C) +=; datt_scratch (B,NH,T,T) is workspace, its contents on entry are ignored.
  virtual void attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                  const float* att, int B, int T, int C, int NH, AttentionMask mask) = 0;

  // x (N,C) += bias (C) on every row (BERT's token-type embedding). Its gradient, dbias (C) += the
  // column sums of dout (N,C), is matmul_backward with null dinp and dweight.
  virtual void add_bias(float* x, const float* bias, int N, int C) = 0;

  // GELU, tanh approximation (as GPT-2 and PyTorch's approximate="tanh").
  virtual void gelu_forward(float* out, const float* inp, std::size_t n) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) = 0;

  // Softmax + cross-entropy over the first V columns of logits (N, Vp) where Vp >= V is the row
  // stride (padded vocabulary). probs (N, Vp), losses (N) = -log probs[n, targets[n]], and 0 where
  // targets[n] == kIgnoreTarget.
  virtual void softmax_xent_forward(float* losses, float* probs, const float* logits, const int32_t* targets,
                                    int N, int V, int Vp) = 0;
  // dlogits (N, Vp) += (probs - onehot(targets)) * dloss; columns >= V and rows whose target is
  // kIgnoreTarget untouched.
  virtual void softmax_xent_backward(float* dlogits, const float* probs, const int32_t* targets, int N, int V,
                                     int Vp, float dloss) = 0;

  // ---- Llama ops: RMSNorm, rotary position embeddings, SwiGLU, grouped-query attention ------------
  // out (N,C) = inp * rstd * weight; rstd (N) = 1 / sqrt(mean_c(inp^2) + eps), saved for backward.
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                               float eps) = 0;
  // dinp (N,C) +=; dweight (C) +=.
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int N, int C) = 0;

  // Rotary position embeddings, IN PLACE on the first `heads` heads of HS floats of every row of
  // x (B, T, row_floats): in a Llama's qkv rows, its query and key heads. Row (b, t) is at position t; the
  // pair (i, i + HS/2) of each head turns by the angle t * base^(-2i/HS) (HF's rotate_half layout).
  virtual void rope_forward(float* x, int B, int T, int row_floats, int heads, int HS, float base) = 0;
  // A rotation's gradient is the inverse rotation, so backward turns dx back IN PLACE: the one *_backward
  // op that transforms instead of accumulating (its caller owns dx, attention_backward's output).
  virtual void rope_backward(float* dx, int B, int T, int row_floats, int heads, int HS, float base) = 0;

  // SwiGLU: out (N,F) = silu(gate) * up, where inp (N, 2F) holds gate (N, F) and up (N, F) side by side in
  // every row (one matmul against gate_proj and up_proj stacked computes it).
  virtual void swiglu_forward(float* out, const float* inp, int N, int F) = 0;
  // dinp (N, 2F) +=.
  virtual void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) = 0;

  // Grouped-query self-attention. qkv (B, T, (NH + 2 NKV) HS) holds NH query heads, NKV key heads and NKV
  // value heads side by side; query head h reads key/value head h / (NH / NKV) (NKV divides NH).
  // out (B, T, NH HS); att (B, NH, T, T) as attention_forward's; scale 1/sqrt(HS). attention_forward is
  // this op with NKV = NH and HS = C / NH.
  virtual void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int NKV,
                                     int HS, AttentionMask mask) = 0;
  // dqkv (B, T, (NH + 2 NKV) HS) +=; datt_scratch (B, NH, T, T) is workspace.
  virtual void gqa_attention_backward(float* dqkv, float* datt_scratch, const float* dout, const float* qkv,
                                      const float* att, int B, int T, int NH, int NKV, int HS,
                                      AttentionMask mask) = 0;

  // ---- optimizers -----------------------------------------------------------------------------
  // One AdamW step on n parameters. grad_scale multiplies g first (gradient clipping, averaging);
  // step is 1-based for bias correction.
  virtual void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                            const AdamWConfig& cfg, float grad_scale, long step) = 0;
  // SGD with momentum (PyTorch semantics: buf = momentum*buf + g; p -= lr*buf), buf zero-initialised.
  virtual void sgd_update(float* params, const float* grads, float* momentum_buf, std::size_t n,
                          const SgdConfig& cfg, float grad_scale) = 0;
  // ---- CNN ops --------------------------------------------------------------------------------
  // Layouts are PyTorch's NCHW. Spatial sizes: OH = (H + 2 pad - KH) / stride + 1 (floor), likewise OW.

  // Floats of device workspace conv2d_forward/backward need for shape s (the caller allocates it
  // once for the largest conv of a model; the contents on entry are ignored).
  virtual std::size_t conv2d_workspace_floats(const Conv2dShape& s) const = 0;
  // out (B, OC, OH, OW) = conv(inp (B, IC, H, W), weight (OC, IC, KH, KW)) + bias (OC), zero padding.
  virtual void conv2d_forward(float* out, const float* inp, const float* weight, const float* bias,
                              float* workspace, const Conv2dShape& s) = 0;
  // dinp (B, IC, H, W) +=; dweight (OC, IC, KH, KW) +=; dbias (OC) += sum over (B, OH, OW) of dout.
  virtual void conv2d_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, float* workspace, const Conv2dShape& s) = 0;

  // Batch normalization over (B, HW) per channel of inp (B, C, HW); out = norm * weight + bias.
  // training: statistics of this batch (biased variance for the normalization), saved as mean (C)
  //   and rstd (C) = 1/sqrt(var + eps) for backward; running_mean/running_var (C) are updated in
  //   place as PyTorch does: r = (1 - momentum) r + momentum * stat, with the UNBIASED variance
  //   (B*HW / (B*HW - 1)) for running_var. Needs B*HW > 1.
  // !training: normalizes with running_mean/running_var; mean/rstd (may be null) receive those.
  // Under data parallelism each rank uses its local batch (PyTorch DDP without SyncBatchNorm).
  virtual void batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean,
                                 float* running_var, const float* inp, const float* weight, const float* bias,
                                 int B, int C, int HW, float momentum, float eps, bool training) = 0;
  // Backward of the training-mode forward (batch statistics): dinp (B, C, HW) +=, dweight (C) +=,
  // dbias (C) +=.
  virtual void batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean, const float* rstd,
                                  int B, int C, int HW) = 0;

  // out = max(inp, 0); out may equal inp (in place).
  virtual void relu_forward(float* out, const float* inp, std::size_t n) = 0;
  // dinp += dout where x > 0 (x may be the ReLU input or its output: the mask is the same).
  virtual void relu_backward(float* dinp, const float* x, const float* dout, std::size_t n) = 0;

  // Max pooling, padding counts as -inf. out (B, C, OH, OW); argmax (B, C, OH, OW) int32 receives the
  // winning input index within its (H, W) plane (the first maximum in row-major window order, as
  // PyTorch's CPU kernel).
  virtual void maxpool2d_forward(float* out, int32_t* argmax, const float* inp, const Pool2dShape& s) = 0;
  // dinp (B, C, H, W) += dout routed through argmax.
  virtual void maxpool2d_backward(float* dinp, const float* dout, const int32_t* argmax,
                                  const Pool2dShape& s) = 0;

  // Average pooling, padding zeros counted in the divisor k*k (PyTorch's count_include_pad=True).
  virtual void avgpool2d_forward(float* out, const float* inp, const Pool2dShape& s) = 0;
  virtual void avgpool2d_backward(float* dinp, const float* dout, const Pool2dShape& s) = 0;

  // Global average pooling: out (B, C) = mean over HW of inp (B, C, HW).
  virtual void global_avgpool_forward(float* out, const float* inp, int B, int C, int HW) = 0;
  // dinp (B, C, HW) += dout (B, C) / HW.
  virtual void global_avgpool_backward(float* dinp, const float* dout, int B, int C, int HW) = 0;
};

}  // namespace tt
