// CPU backend: construction, description, memory, elementwise ops and host-returning reductions.
#include "core/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "base/error.h"
#include "base/host_memory.h"
#include "core/cpu/cpu_common.h"
#include "core/cpu/cpu_conv.h"

namespace tt {

using cpu::kParallelMin;
using cpu::kReduceChunk;

std::unique_ptr<Backend> make_cpu_backend(int threads, CpuConv conv) {
  return std::make_unique<CpuBackend>(threads, conv);
}

CpuBackend::CpuBackend(int threads, CpuConv conv) : threads_(threads) {
  if (threads < 1) throw InputError("cpu backend: thread count must be >= 1, got " + std::to_string(threads));
  openblas_set_num_threads(threads_);
  if (conv == CpuConv::Dnnl || (conv == CpuConv::Auto && cpu::dnnl_available())) {
    dnnl_ = std::make_unique<cpu::DnnlConv>(threads_);
    conv_ = conv;
  }
}

CpuBackend::~CpuBackend() = default;

void CpuBackend::use_blas_threads() const {
  if (openblas_get_num_threads() != threads_) openblas_set_num_threads(threads_);
}

namespace {
// openblas_get_config() gives e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"; the
// core name says which kernel set was picked at run time (e.g. "Haswell", "Zen").
std::string blas_kernels() {
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return "cpu: " + config + ", core " + openblas_get_corename();
}
}  // namespace

std::string CpuBackend::describe() const {
  return blas_kernels() + ", " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads") +
         ", conv " + (dnnl_ ? cpu::dnnl_describe() : "im2col+sgemm");
}

std::string CpuBackend::numerics() const {
  return blas_kernels() + ", conv " + (dnnl_ ? cpu::dnnl_describe() : "im2col+sgemm");
}

// ---- memory ---------------------------------------------------------------------------------------

void* CpuBackend::allocate(std::size_t bytes) {
  // Huge pages from 2 MiB up: the parameter, gradient and optimizer arenas (Note [Huge pages for large
  // host buffers], base/host_memory.h). Zero-filled, which also faults the pages in.
  void* p = allocate_host_bytes(bytes);
  std::memset(p, 0, std::max<std::size_t>(bytes, 1));
  return p;
}

void CpuBackend::deallocate(void* p) noexcept {
  free_host_bytes(p);
}

void CpuBackend::copy_to_device(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(dst, host_src, bytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(host_dst, src, bytes);
}

void CpuBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
}

void CpuBackend::fill(float* x, float value, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) x[i] = value;
}

// ---- elementwise ----------------------------------------------------------------------------------
// No __restrict here: callers may pass out == a (in-place residual add); GCC still vectorises these
// loops behind a runtime overlap check.

void CpuBackend::add(float* out, const float* a, const float* b, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) out[i] = a[i] + b[i];
}

void CpuBackend::accumulate(float* dst, const float* src, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) dst[i] += src[i];
}

void CpuBackend::scale(float* x, float alpha, std::size_t n) {
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) x[i] *= alpha;
}

// ---- reductions -----------------------------------------------------------------------------------

namespace {

// Sum of f(x[i]) over one chunk in double, with 8 independent lanes combined in a fixed order: the
// lanes let the compiler vectorise (and break the add latency chain) without changing the result
// from one build of the loop to the next.
template <typename F>
double chunk_sum(const float* x, std::ptrdiff_t n, F f) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  std::ptrdiff_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += f(static_cast<double>(x[i + l]));
  }
  for (; i < n; ++i) acc[0] += f(static_cast<double>(x[i]));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Chunked, thread-count-independent reduction: chunk partials (in parallel), then their sum in order.
template <typename F>
double reduce(const float* x, std::size_t n, int threads, F f) {
  const auto len = static_cast<std::ptrdiff_t>(n);
  const std::ptrdiff_t nchunks = cpu::num_chunks(len, kReduceChunk);
  std::vector<double> partial(static_cast<std::size_t>(nchunks));  // (nchunks)
#pragma omp parallel for num_threads(threads) schedule(static) if (nchunks > 1)
  for (std::ptrdiff_t c = 0; c < nchunks; ++c) {
    const std::ptrdiff_t begin = c * kReduceChunk;
    const std::ptrdiff_t end = std::min(len, begin + kReduceChunk);
    partial[static_cast<std::size_t>(c)] = chunk_sum(x + begin, end - begin, f);
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace

double CpuBackend::sum_squares(const float* x, std::size_t n) {
  return reduce(x, n, threads_, [](double v) { return v * v; });
}

double CpuBackend::mean(const float* x, std::size_t n) {
  if (n == 0) return 0.0;
  return reduce(x, n, threads_, [](double v) { return v; }) / static_cast<double>(n);
}

}  // namespace tt
