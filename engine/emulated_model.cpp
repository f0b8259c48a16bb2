#include "engine/emulated_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/precise_wait.h"

namespace tt {

std::vector<GpuSpec> gpu_specs() {
  // Dense peaks (the data sheets' starred figures are with 2:4 sparsity; halved here).
  //
  // Efficiency and activation traffic: teetrain's own CUDA backend, measured on an H200 for gpt2 ...
  // gpt2-xl at B = 4, T = 1024 in TF32 and FP32 (tests/fixtures/gpu_size_sweep_h200): one fit of
  // step = FLOPs / (peak x 0.76) + 3 x 5.0 x activation bytes / (0.8 x HBM) puts all eight within
  // 5.1%, where FLOPs alone at one efficiency miss TF32 gpt2 by 37% (its model-FLOP utilisation grows
  // from 18% to 31% with size: small models spend more of their time in memory-bound element-wise
  // work). 0.76 matches cuBLAS alone at those shapes (71-80% of TF32 peak, 68-75% of FP32). Not
  // measured on the other GPUs: they use the same two figures.
  constexpr double kEff = kMeasuredMatmulEfficiency, kTraffic = kMeasuredActTraffic;
  return {
      // NVIDIA H100 SXM5 data sheet: FP32 67, TF32 989* / BF16 1979* TFLOPS (sparse), HBM3 3.35 TB/s.
      // AES-GCM: our kernel (tee/cuda) sealed 148.8 GB/s on an H200 for 64 x 1 MiB messages, the ring's
      // segment size (bench_gpu_aead, 2026-11-26). It is bound by SM integer throughput, not memory (it
      // moves ~0.3 TB/s of HBM's 3-5), and an H100 SXM has the same 132 SMs: the H200 figure is used.
      // NVLink 4: 18 links x 25 GB/s per direction = 450 GB/s each way (900 GB/s total).
      {"h100", 67.0, 494.7, 989.4, 3350.0, kEff, kTraffic, 148.8, 450.0},
      // NVIDIA H200 SXM data sheet: same Hopper compute as H100 SXM, HBM3e 4.8 TB/s.
      {"h200", 67.0, 494.7, 989.4, 4800.0, kEff, kTraffic, 148.8, 450.0},
      // NVIDIA A100 80GB SXM data sheet: FP32 19.5, TF32 156, BF16 312 TFLOPS, HBM2e 2039 GB/s.
      // NVLink 3: 12 links x 25 GB/s = 300 GB/s each way.
      {"a100", 19.5, 156.0, 312.0, 2039.0, kEff, kTraffic, 0.0, 300.0},
      // NVIDIA V100 SXM2 data sheet: FP32 15.7 TFLOPS, FP16 tensor 125 TFLOPS (no TF32/BF16: the
      // tf32 column repeats FP32, the bf16 column is FP16 mixed precision), HBM2 900 GB/s.
      // NVLink 2: 6 links x 25 GB/s = 150 GB/s each way.
      {"v100", 15.7, 15.7, 125.0, 900.0, kEff, kTraffic, 0.0, 150.0},
  };
}

GpuSpec gpu_spec(const std::string& name) {
  std::string names;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.name == name) return g;
    names += (names.empty() ? "" : ", ") + g.name;
  }
  throw InputError("unknown GPU '" + name + "': choose one of " + names + " (or set --gpu-tflops)");
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
  } else if (precision == "fp32") {
    peak = spec.peak_tflops_fp32;
  } else if (precision == "tf32") {
    peak = spec.peak_tflops_tf32;
  } else if (precision == "bf16") {
    peak = spec.peak_tflops_bf16;
  } else {
    throw InputError("unknown GPU precision '" + precision + "': choose fp32, tf32 or bf16");
  }
  const double eff = efficiency();
  if (!(peak > 0) || !(eff > 0) || eff > 1.0) {
    throw InputError("emulated GPU needs a positive peak and an efficiency in (0, 1]; got " +
                     std::to_string(peak) + " TFLOP/s x " + std::to_string(eff));
  }
  return peak * 1e12 * eff;
}

double EmulatedGpu::activation_seconds(double act_bytes) const {
  constexpr double kHbmEfficiency = 0.8;  // streaming kernels reach ~80% of HBM bandwidth
  const double bytes = act_bytes * act_traffic() * (precision == "bf16" ? 0.5 : 1.0);
  return bytes / (spec.hbm_gbps * 1e9 * kHbmEfficiency);
}

std::string EmulatedGpu::describe() const {
  char buf[200];
  const double peak = flops_per_second() / efficiency() / 1e12;
  std::snprintf(buf, sizeof buf, "%s %s %.1f TFLOP/s x %.2f + activations x%.1f at %.0f GB/s",
                spec.name.c_str(), tflops_override > 0 ? "custom" : precision.c_str(), peak, efficiency(),
                act_traffic(), spec.hbm_gbps);
  return buf;
}

namespace {
void wait_seconds(double s) {
  if (s <= 0) return;
  precise_wait_until(
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s)));
}

// "h.3.attn.c_attn.weight" -> "h.3"; "wte" -> "wte"; "ln_f.weight" -> "ln_f".
std::string layer_key(const std::string& name) {
  const auto d1 = name.find('.');
  if (d1 == std::string::npos) return name;
  const auto d2 = name.find('.', d1 + 1);
  const std::string second = name.substr(d1 + 1, d2 == std::string::npos ? std::string::npos : d2 - d1 - 1);
  const bool numeric = !second.empty() &&
                       std::all_of(second.begin(), second.end(), [](char c) { return c >= '0' && c <= '9'; });
  return numeric ? name.substr(0, d2) : name.substr(0, d1);
}
}  // namespace

std::size_t default_grad_backing_bytes(std::size_t num_params) {
  constexpr std::size_t kRealLimit = std::size_t{1} << 30;
  return num_params * sizeof(float) <= kRealLimit ? 0 : std::size_t{64} << 20;
}

std::vector<ParamGroup> layer_groups(const std::vector<ParamInfo>& params, std::size_t num_params) {
  std::vector<ParamGroup> groups;
  std::string key;
  for (const ParamInfo& p : params) {
    const std::string k = layer_key(p.name);
    if (groups.empty() || k != key) {
      groups.push_back({p.offset, p.offset + p.numel});
      key = k;
    } else {
      groups.back().end = p.offset + p.numel;
    }
  }
  if (groups.empty() && num_params > 0) groups.push_back({0, num_params});
  if (!groups.empty()) groups.back().end = std::max(groups.back().end, num_params);
  return groups;
}

// One shared-memory block mapped again and again over a contiguous virtual range: num_params floats
// of address space backed by only `backing` bytes of memory.
class EmulatedModel::AliasedBuffer {
 public:
  AliasedBuffer(std::size_t bytes, std::size_t backing) : bytes_(bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    backing = std::max(page, (backing + page - 1) / page * page);
    const std::size_t total = std::max(page, (bytes + page - 1) / page * page);
    fd_ = ::memfd_create("teetrain-emulated-grads", MFD_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(backing)) != 0) fail("memfd");
    // Reserve the whole range first so the fixed mappings below cannot land on anything else.
    void* base = ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) fail("mmap reserve");
    base_ = static_cast<std::byte*>(base);
    total_ = total;
    for (std::size_t off = 0; off < total; off += backing) {
      const std::size_t len = std::min(backing, total - off);
      if (::mmap(base_ + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED)
        fail("mmap");
    }
  }
  ~AliasedBuffer() {
    if (base_ != nullptr) ::munmap(base_, total_);
    if (fd_ >= 0) ::close(fd_);
  }
  AliasedBuffer(const AliasedBuffer&) = delete;
  AliasedBuffer& operator=(const AliasedBuffer&) = delete;
  float* data() const { return reinterpret_cast<float*>(base_); }

 private:
  [[noreturn]] void fail(const char* what) {
    const int err = errno;
    if (base_ != nullptr) ::munmap(base_, total_);
    if (fd_ >= 0) ::close(fd_);
    throw RunError(std::string("emulated gradient buffer (") + std::to_string(bytes_) + " bytes): " + what +
                   ": " + std::strerror(err));
  }
  std::size_t bytes_;
  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::size_t total_ = 0;
};

EmulatedModel::EmulatedModel(Backend& backend, EmulatedModelConfig cfg)
    : backend_(backend), cfg_(std::move(cfg)) {
  if (!cfg_.flops) throw InputError("emulated model " + cfg_.name + ": no FLOP count");
  (void)cfg_.gpu.flops_per_second();  // validates the GPU settings before the run starts
  groups_ = layer_groups(cfg_.params, cfg_.num_params);
  const std::size_t bytes = cfg_.num_params * sizeof(float);
  if (cfg_.grad_backing_bytes > 0 && cfg_.grad_backing_bytes < bytes) {
    aliased_ = std::make_unique<AliasedBuffer>(bytes, cfg_.grad_backing_bytes);
    grads_ = aliased_->data();
  } else {
    real_ = DeviceBuffer(backend_, bytes);
    grads_ = real_.as<float>();
    // A small deterministic pattern that depends only on the index: identical on every rank, so the
    // mean over ranks leaves it (almost) unchanged step after step and the gradient norm stays finite.
    std::vector<float> host(std::min<std::size_t>(cfg_.num_params, std::size_t{1} << 16));
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 1e-4f;
    for (std::size_t off = 0; off < cfg_.num_params; off += host.size()) {
      const std::size_t n = std::min(host.size(), cfg_.num_params - off);
      backend_.copy_to_device(grads_ + off, host.data(), n * sizeof(float));
    }
  }
}

EmulatedModel::~EmulatedModel() = default;

double EmulatedModel::activation_seconds(int B, int T) const {
  return cfg_.activation_bytes ? cfg_.gpu.activation_seconds(cfg_.activation_bytes(B, T)) : 0.0;
}
double EmulatedModel::forward_seconds(int B, int T) const {
  return cfg_.flops(B, T).forward / cfg_.gpu.flops_per_second() + activation_seconds(B, T);
}
double EmulatedModel::backward_seconds(int B, int T) const {
  return cfg_.flops(B, T).backward / cfg_.gpu.flops_per_second() + 2.0 * activation_seconds(B, T);
}

float EmulatedModel::forward(const Batch& batch) {
  last_B_ = batch.B;
  last_T_ = batch.T;
  wait_seconds(forward_seconds(batch.B, batch.T));
  return cfg_.loss;
}

void EmulatedModel::backward(const GradReadyFn& on_ready) {
  if (last_B_ == 0) throw RunError("emulated model: backward() without a preceding forward(batch)");
  const double total = backward_seconds(last_B_, last_T_);
  const auto t0 = std::chrono::steady_clock::now();
  const double n = static_cast<double>(std::max<std::size_t>(1, cfg_.num_params));
  // Deadlines are cumulative from t0, so the wake-up error of one group does not add up over layers.
  std::size_t done = 0;
  for (auto g = groups_.rbegin(); g != groups_.rend(); ++g) {
    done += g->end - g->begin;
    const double at = total * static_cast<double>(done) / n;
    precise_wait_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(at)));
    if (on_ready) on_ready(g->begin);
  }
}

std::string EmulatedModel::describe() const {
  return "COMPUTE EMULATED: " + cfg_.name + " forward/backward are waits on an emulated " +
         cfg_.gpu.describe() +
         (aliased_
              ? "; gradient buffer aliased onto " + std::to_string(cfg_.grad_backing_bytes >> 20) + " MiB"
              : "") +
         "; buckets, ring, crypto and ingress are real";
}

double EmulatedOptimizer::step_seconds() const {
  constexpr double kBytesPerParam = 28.0;  // fused AdamW in FP32: 4 reads + 3 writes of 4 bytes
  // Our AdamW kernel reached 51% (gpt2) to 65% (gpt2-xl) of an H200's HBM bandwidth
  // (tests/fixtures/gpu_size_sweep_h200); the FLOP efficiency does not apply to it.
  constexpr double kHbmEfficiency = 0.6;
  return static_cast<double>(num_params_) * kBytesPerParam / (gpu_.spec.hbm_gbps * 1e9 * kHbmEfficiency);
}

void EmulatedOptimizer::step(Model& /*model*/, float /*lr*/, float /*grad_scale*/, long /*step_index*/) {
  wait_seconds(step_seconds());
}

}  // namespace tt
