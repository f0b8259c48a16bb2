// CPU backend: 2-D convolution on oneDNN (see cpu_conv.h).
//
// The interface is NCHW; oneDNN's fast kernels want blocked layouts (nChw8c on AVX2, nChw16c on
// AVX-512), so each op reorders its operands into the caller's workspace, as PyTorch's mkldnn path
// does. Per shape, at the first call, we create and cache:
//   forward      [inp -> fx] [weight -> fw] conv_fwd -> fy, fy -> out
//   bwd data     dout -> by, [weight -> bw], conv_bwd_data -> bx, dinp += bx          (reorder with sum)
//   bwd weights  [inp -> wx], [dout -> wy unless by has its layout], conv_bwd_weights -> wdw,
//                dweight += wdw                                                        (reorder with sum)
// A bracketed reorder is skipped when oneDNN chose the user's own layout (the stem's 3-channel input is
// read as nchw). The accumulating reorders implement backend.h's "+=" contract without a temporary.
//
// Why the reorders stay per op (measured 2026-11-26, 2 threads, AVX2 EPYC, load 5-8):
//  - They are 6% of the oneDNN time of a CIFAR-stem ResNet-18 step (ONEDNN_VERBOSE=1, 3 steps: 533 of
//    8,970 ms), 88% of that activations; only a model kept in blocked layout end to end (batch norm,
//    ReLU, adds and pools too) would avoid those.
//  - Weights change at every optimizer step and each is read once per step by forward and once by
//    backward data, in different blocked layouts: a cache kept until the next update would save
//    nothing in training (weight reorders are 12% of the reorder time, under 1% of the step).
//  - Plain layouts instead (src/dst nchw: oneDNN then picks its gemm convolution, no reorders) won
//    some single-conv runs of bench_conv but lost in the step: forward 0.62-0.69 s vs 0.52-0.58 s
//    (CIFAR stem, 3 interleaved runs each), and its backward is 5x slower at 32x32; not kept.
//
// dbias is our own per-channel sum (conv_bias_backward), so one primitive set serves convs with and
// without bias; ResNet's convs have none.
//
// Every buffer a primitive touches is a 64-byte-aligned region of the workspace (oneDNN's scratchpad
// too, in user mode), so a step allocates nothing and oneDNN's blocking sees the same alignment in
// every run.
#include <omp.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "core/cpu/cpu_conv.h"
#include "core/shape_checks.h"

#ifdef TEETRAIN_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tt::cpu {

#ifdef TEETRAIN_HAVE_DNNL

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

// Sets the calling thread's OpenMP thread count (which oneDNN's OMP runtime reads, at primitive
// creation to partition the work and at execution) for one scope, and restores it after.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// Workspace floats for a descriptor, rounded up to 16 floats (64 bytes) so the next region is aligned.
std::size_t floats_of(const memory::desc& md) {
  return (md.get_size() + 63) / 64 * 16;
}

// One primitive with its arguments (memory objects whose data handles are set per call).
struct Step {
  dnnl::primitive prim;
  Args args;
  bool active = false;
  void run(dnnl::stream& strm) const {
    if (active) prim.execute(strm, args);
  }
};

// A region of the workspace: a memory object whose data handle is workspace + offset (floats).
struct Placed {
  memory mem;
  std::size_t offset = 0;
};

struct Entry {
  // User-layout memories: (B, IC, H, W) input and its gradient, (OC, IC, KH, KW) weight and its
  // gradient, (B, OC, OH, OW) output and output gradient.
  memory inp, dinp, wei, dwei, out, dout;
  Step r_fx, r_fw, fwd, r_fy;           // forward
  Step r_by, r_bw, bwd_data, r_bx;      // backward data
  Step r_wx, r_wy, bwd_weights, r_wdw;  // backward weights
  std::vector<Placed> fwd_ws, bwd_ws;   // the workspace regions of each phase
  std::size_t fwd_floats = 0, bwd_floats = 0;
  std::string impl;
};

// Lays out one phase's workspace regions in order.
class Layout {
 public:
  Layout(const dnnl::engine& eng, std::vector<Placed>& regions) : eng_(eng), regions_(regions) {}
  // A workspace region for md, or `user` itself when md is the user's layout and !always.
  memory place(const memory::desc& md, const memory& user, bool always) {
    if (!always && md == user.get_desc()) return user;
    return at(md, take(md));
  }
  // A region at a given offset (scratchpads of primitives that run one after the other share one).
  memory at(const memory::desc& md, std::size_t offset) {
    memory m(md, eng_, DNNL_MEMORY_NONE);
    regions_.push_back({m, offset});
    return m;
  }
  std::size_t take(const memory::desc& md) {
    const std::size_t off = floats_;
    floats_ += floats_of(md);
    return off;
  }
  std::size_t floats() const { return floats_; }

 private:
  const dnnl::engine& eng_;
  std::vector<Placed>& regions_;
  std::size_t floats_ = 0;
};

std::array<int, 9> key_of(const Conv2dShape& s) {
  return {s.B, s.IC, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad};
}

void set_handle(memory& m, const float* p) {
  m.set_data_handle(const_cast<float*>(p));
}

}  // namespace

// The descriptors of one conv shape: the three primitive descriptors.
struct ConvDescs {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};

struct DnnlConv::Impl {
  explicit Impl(int n) : threads(n) {}
  int threads;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::map<std::array<int, 9>, Entry> cache;

  Entry& entry(const Conv2dShape& s);
  ConvDescs descs(const Conv2dShape& s) const;
  void build(Entry& e, const Conv2dShape& s) const;
  void build_forward(Entry& e, const dnnl::convolution_forward::primitive_desc& fpd) const;
  void build_backward(Entry& e, const dnnl::convolution_backward_data::primitive_desc& dpd,
                      const dnnl::convolution_backward_weights::primitive_desc& wpd) const;
  // A reorder src -> dst (accumulating into dst when sum); inactive when the layouts agree and !sum.
  Step reorder(const memory& src, const memory& dst, bool sum) const;
};

Step DnnlConv::Impl::reorder(const memory& src, const memory& dst, bool sum) const {
  Step st;
  if (!sum && src.get_desc() == dst.get_desc()) return st;
  dnnl::primitive_attr attr;
  if (sum) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  st.prim = dnnl::reorder(dnnl::reorder::primitive_desc(eng, src.get_desc(), eng, dst.get_desc(), attr));
  st.args = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  st.active = true;
  return st;
}

Entry& DnnlConv::Impl::entry(const Conv2dShape& s) {
  const auto key = key_of(s);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  check_conv_shape(s);
  Entry e;
  try {
    OmpThreads omp(threads);
    build(e, s);
  } catch (const dnnl::error& err) {
    throw RunError("conv2d (oneDNN): cannot create primitives for " + shape_string(s) + ": " + err.what());
  }
  return cache.emplace(key, std::move(e)).first->second;
}

ConvDescs DnnlConv::Impl::descs(const Conv2dShape& s) const {
  const memory::dims src_dims{s.B, s.IC, s.H, s.W};
  const memory::dims wei_dims{s.OC, s.IC, s.KH, s.KW};
  const memory::dims dst_dims{s.B, s.OC, s.OH(), s.OW()};
  const memory::dims strides{s.stride, s.stride};
  const memory::dims pad_l{s.pad, s.pad};
  // PyTorch's floor semantics: the right padding is what the last window reaches (may be < pad, < 0).
  const memory::dims pad_r{(s.OH() - 1) * s.stride + s.KH - s.H - s.pad,
                           (s.OW() - 1) * s.stride + s.KW - s.W - s.pad};
  const auto f32 = memory::data_type::f32;
  const memory::desc any_src(src_dims, f32, Tag::any), any_wei(wei_dims, f32, Tag::any),
      any_dst(dst_dims, f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algo = dnnl::algorithm::convolution_direct;  // pinned: never Winograd
  using Fwd = dnnl::convolution_forward;
  using BwdD = dnnl::convolution_backward_data;
  using BwdW = dnnl::convolution_backward_weights;
  const Fwd::primitive_desc fpd(
      Fwd::desc(dnnl::prop_kind::forward_training, algo, any_src, any_wei, any_dst, strides, pad_l, pad_r),
      attr, eng);
  const BwdD::primitive_desc dpd(BwdD::desc(algo, any_src, any_wei, any_dst, strides, pad_l, pad_r), attr,
                                 eng, fpd);
  const BwdW::primitive_desc wpd(BwdW::desc(algo, any_src, any_wei, any_dst, strides, pad_l, pad_r), attr,
                                 eng, fpd);
  return {fpd, dpd, wpd};
}

void DnnlConv::Impl::build(Entry& e, const Conv2dShape& s) const {
  const auto f32 = memory::data_type::f32;
  auto user = [&](const memory::dims& d, Tag t) { return memory({d, f32, t}, eng, DNNL_MEMORY_NONE); };
  const memory::dims src_dims{s.B, s.IC, s.H, s.W}, wei_dims{s.OC, s.IC, s.KH, s.KW},
      dst_dims{s.B, s.OC, s.OH(), s.OW()};
  e.inp = user(src_dims, Tag::nchw);
  e.dinp = user(src_dims, Tag::nchw);
  e.wei = user(wei_dims, Tag::oihw);
  e.dwei = user(wei_dims, Tag::oihw);
  e.out = user(dst_dims, Tag::nchw);
  e.dout = user(dst_dims, Tag::nchw);
  const ConvDescs d = descs(s);
  e.impl = std::string("fwd ") + d.fwd.impl_info_str() + ", bwd_d " + d.bwd_data.impl_info_str() +
           ", bwd_w " + d.bwd_weights.impl_info_str();
  build_forward(e, d.fwd);
  build_backward(e, d.bwd_data, d.bwd_weights);
}

void DnnlConv::Impl::build_forward(Entry& e, const dnnl::convolution_forward::primitive_desc& fpd) const {
  Layout f(eng, e.fwd_ws);
  const memory fx = f.place(fpd.src_desc(), e.inp, false);
  const memory fw = f.place(fpd.weights_desc(), e.wei, false);
  const memory fy = f.place(fpd.dst_desc(), e.out, false);
  const memory fpad = f.place(fpd.scratchpad_desc(), e.out, true);
  e.fwd_floats = f.floats();
  e.r_fx = reorder(e.inp, fx, false);
  e.r_fw = reorder(e.wei, fw, false);
  e.fwd = {dnnl::convolution_forward(fpd),
           {{DNNL_ARG_SRC, fx}, {DNNL_ARG_WEIGHTS, fw}, {DNNL_ARG_DST, fy}, {DNNL_ARG_SCRATCHPAD, fpad}},
           true};
  e.r_fy = reorder(fy, e.out, false);
}

void DnnlConv::Impl::build_backward(Entry& e, const dnnl::convolution_backward_data::primitive_desc& dpd,
                                    const dnnl::convolution_backward_weights::primitive_desc& wpd) const {
  Layout b(eng, e.bwd_ws);
  const memory by = b.place(dpd.diff_dst_desc(), e.dout, false);
  const memory bw = b.place(dpd.weights_desc(), e.wei, false);
  const memory bx = b.place(dpd.diff_src_desc(), e.dinp, true);
  const memory wx = b.place(wpd.src_desc(), e.inp, false);
  // Backward weights reads the gradient reordered for backward data when the layouts agree.
  const bool share_dy = wpd.diff_dst_desc() == dpd.diff_dst_desc();
  const memory wy = share_dy ? by : b.place(wpd.diff_dst_desc(), e.dout, false);
  const memory wdw = b.place(wpd.diff_weights_desc(), e.dwei, true);
  // The two primitives run one after the other: one scratchpad region, the larger of their needs.
  const memory::desc& dpad = dpd.scratchpad_desc();
  const memory::desc& wpad = wpd.scratchpad_desc();
  const std::size_t pad_at = b.take(dpad.get_size() > wpad.get_size() ? dpad : wpad);
  e.bwd_floats = b.floats();
  e.r_by = reorder(e.dout, by, false);
  e.r_bw = reorder(e.wei, bw, false);
  e.bwd_data = {dnnl::convolution_backward_data(dpd),
                {{DNNL_ARG_DIFF_DST, by},
                 {DNNL_ARG_WEIGHTS, bw},
                 {DNNL_ARG_DIFF_SRC, bx},
                 {DNNL_ARG_SCRATCHPAD, b.at(dpad, pad_at)}},
                true};
  e.r_bx = reorder(bx, e.dinp, true);
  e.r_wx = reorder(e.inp, wx, false);
  if (!share_dy) e.r_wy = reorder(e.dout, wy, false);
  e.bwd_weights = {dnnl::convolution_backward_weights(wpd),
                   {{DNNL_ARG_SRC, wx},
                    {DNNL_ARG_DIFF_DST, wy},
                    {DNNL_ARG_DIFF_WEIGHTS, wdw},
                    {DNNL_ARG_SCRATCHPAD, b.at(wpad, pad_at)}},
                   true};
  e.r_wdw = reorder(wdw, e.dwei, true);
}

// ---- DnnlConv -------------------------------------------------------------------------------------

bool dnnl_available() {
  return true;
}

std::string dnnl_describe() {
  const dnnl_version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

DnnlConv::DnnlConv(int threads) : impl_(std::make_unique<Impl>(threads)) {}
DnnlConv::~DnnlConv() = default;

std::size_t DnnlConv::workspace_floats(const Conv2dShape& s) {
  const Entry& e = impl_->entry(s);
  return std::max(e.fwd_floats, e.bwd_floats);
}

std::string DnnlConv::implementations(const Conv2dShape& s) {
  return impl_->entry(s).impl;
}

void DnnlConv::forward(float* out, const float* inp, const float* weight, const float* bias, float* workspace,
                       const Conv2dShape& s) {
  Entry& e = impl_->entry(s);
  OmpThreads omp(impl_->threads);
  set_handle(e.inp, inp);
  set_handle(e.wei, weight);
  set_handle(e.out, out);
  for (Placed& r : e.fwd_ws) set_handle(r.mem, workspace + r.offset);
  dnnl::stream& strm = impl_->strm;
  e.r_fx.run(strm);
  e.r_fw.run(strm);
  e.fwd.run(strm);
  e.r_fy.run(strm);
  strm.wait();
  if (bias != nullptr) {
    // out (B, OC, OHW) += bias (OC): a separate pass, only for convs with a bias (none in ResNet).
    const std::ptrdiff_t OHW = static_cast<std::ptrdiff_t>(s.OH()) * s.OW();
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(s.B) * s.OC;
#pragma omp parallel for num_threads(impl_->threads) schedule(static)
    for (std::ptrdiff_t r = 0; r < rows; ++r) {
      const float bv = bias[r % s.OC];
      float* __restrict o = out + r * OHW;
      for (std::ptrdiff_t i = 0; i < OHW; ++i) o[i] += bv;
    }
  }
}

void DnnlConv::backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, float* workspace, const Conv2dShape& s) {
  Entry& e = impl_->entry(s);
  if (dbias != nullptr) conv_bias_backward(dbias, dout, s, impl_->threads);
  if (dinp == nullptr && dweight == nullptr) return;
  OmpThreads omp(impl_->threads);
  set_handle(e.inp, inp);
  set_handle(e.dinp, dinp);
  set_handle(e.wei, weight);
  set_handle(e.dwei, dweight);
  set_handle(e.dout, dout);
  for (Placed& r : e.bwd_ws) set_handle(r.mem, workspace + r.offset);
  dnnl::stream& strm = impl_->strm;
  e.r_by.run(strm);  // also feeds backward weights when the layouts agree
  if (dinp != nullptr) {
    e.r_bw.run(strm);
    e.bwd_data.run(strm);
    e.r_bx.run(strm);
  }
  if (dweight != nullptr) {
    e.r_wx.run(strm);
    e.r_wy.run(strm);
    e.bwd_weights.run(strm);
    e.r_wdw.run(strm);
  }
  strm.wait();
}

#else  // !TEETRAIN_HAVE_DNNL

bool dnnl_available() {
  return false;
}
std::string dnnl_describe() {
  return "oneDNN not built";
}

struct DnnlConv::Impl {};
DnnlConv::DnnlConv(int /*threads*/) {
  throw RunError("conv2d: this teetrain was built without oneDNN (install libdnnl-dev and reconfigure)");
}
DnnlConv::~DnnlConv() = default;
std::size_t DnnlConv::workspace_floats(const Conv2dShape& /*s*/) {
  return 0;
}
std::string DnnlConv::implementations(const Conv2dShape& /*s*/) {
  return {};
}
void DnnlConv::forward(float*, const float*, const float*, const float*, float*, const Conv2dShape&) {}
void DnnlConv::backward(float*, float*, float*, const float*, const float*, const float*, float*,
                        const Conv2dShape&) {}

#endif  // TEETRAIN_HAVE_DNNL

}  // namespace tt::cpu
