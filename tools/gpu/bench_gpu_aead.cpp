// bench_gpu_aead: throughput of the GPU AES-256-GCM (tee/cuda/gpu_aead.h) for seal and open, next
// to OpenSSL on one CPU thread, for (a) 1 x 256 MiB, (b) 64 x 1 MiB, (c) 1024 x 64 KiB messages with
// 75 bytes of AAD each (the sealed channel's AAD size).
//
// GPU times come from CUDA events around one call (warm-up, then the median of --reps runs); open
// includes its result copy and stream sync. GB/s counts plaintext bytes (1e9 bytes per GB).
// Exit status: 0 ok, 1 if the GPU output differs from OpenSSL's (first and last message of every
// case are checked byte for byte, and every open must succeed), 2 if no GPU is present.
//
// Last, the seal beside a GEMM: fast's AES-GCM kernels run on the communication stream while backward's
// matmuls run on the compute stream. The emulated GPU serialises them (Note [GPU crypto shares the SMs],
// core/emulated/sm_share.h); the line "beside a GEMM" measures how far they really overlap: each alone,
// then both launched together on two streams, and the overlap as a fraction of the shorter one
// (0: serialised, as the emulator charges; 1: the shorter is hidden entirely).
//
// Usage: bench_gpu_aead [--reps N] [--cpu-reps N]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "base/cuda/device.h"
#include "base/cuda/device_memory.h"
#include "tee/crypto/aead.h"
#include "tee/crypto/stream_position.h"
#include "tee/cuda/gpu_aead.h"

namespace {

using tt::cuda::DeviceBytes;
using tt::tee::Aead;
using tt::tee::Cipher;
using tt::tee::StreamPosition;
using tt::tee::cuda::GpuAesGcm;
using tt::tee::cuda::GpuMessage;

constexpr std::size_t kAadLen = 75;

struct Case {
  const char* name;
  std::size_t count;
  std::size_t length;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::uint8_t> aad_of(std::size_t i) {
  std::vector<std::uint8_t> a(kAadLen);
  for (std::size_t j = 0; j < kAadLen; ++j) a[j] = static_cast<std::uint8_t>(i * 31 + j);
  return a;
}

// Message i: origin i, counter 7 (each message its own origin, as every rank's stream is).
StreamPosition position(std::size_t i) {
  return tt::tee::MessageCounter(static_cast<std::uint32_t>(i)).skip_to(7);
}

GpuMessage message(const std::byte* in, std::byte* out, std::size_t length, std::size_t i) {
  GpuMessage m{};
  m.in = in;
  m.out = out;
  m.length = length;
  tt::tee::cuda::place_at(m, position(i));
  const auto a = aad_of(i);
  std::copy(a.begin(), a.end(), m.aad.begin());
  m.aad_len = kAadLen;
  return m;
}

// Median milliseconds of `reps` timed runs of fn on `stream`, after `warm` untimed ones.
template <class Fn>
double time_gpu(cudaStream_t stream, int warm, int reps, Fn&& fn) {
  cudaEvent_t start = nullptr, stop = nullptr;
  TT_CUDA_CHECK(cudaEventCreate(&start));
  TT_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warm; ++i) fn();
  TT_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    TT_CUDA_CHECK(cudaEventRecord(start, stream));
    fn();
    TT_CUDA_CHECK(cudaEventRecord(stop, stream));
    TT_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    TT_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  TT_CUDA_CHECK(cudaEventDestroy(start));
  TT_CUDA_CHECK(cudaEventDestroy(stop));
  return median(ms);
}

template <class Fn>
double time_cpu(int reps, Fn&& fn) {
  fn();  // warm-up (page faults, OpenSSL's first-use setup)
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

double gbps(std::size_t bytes, double ms) {
  return static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

std::vector<std::uint8_t> download(const std::byte* p, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  TT_CUDA_CHECK(cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost));
  return v;
}

// The first and last message of a batch against OpenSSL, and the plaintext the GPU opened.
bool spot_check(const Case& c, Aead& ssl, const std::vector<std::uint8_t>& plain, const DeviceBytes& d_sealed,
                const DeviceBytes& d_opened) {
  const std::size_t sealed_len = c.length + tt::tee::kTagSize;
  bool all_ok = true;
  for (std::size_t i : {std::size_t{0}, c.count - 1}) {
    std::vector<std::uint8_t> expected(sealed_len);
    ssl.seal_append_tag(position(i), aad_of(i), {plain.data() + i * c.length, c.length}, expected);
    if (download(d_sealed.as<std::byte>() + i * sealed_len, sealed_len) != expected) {
      std::printf("MISMATCH: %s message %zu: GPU ciphertext||tag differs from OpenSSL\n", c.name, i);
      all_ok = false;
    }
    const auto got = download(d_opened.as<std::byte>() + i * c.length, c.length);
    if (!std::equal(got.begin(), got.end(), plain.begin() + static_cast<std::ptrdiff_t>(i * c.length))) {
      std::printf("MISMATCH: %s message %zu: GPU-opened plaintext differs\n", c.name, i);
      all_ok = false;
    }
  }
  return all_ok;
}

// Seals and opens one batch shape on the GPU and with OpenSSL on one CPU thread, prints a row and
// returns whether every output matched.
bool bench_case(const Case& c, GpuAesGcm& gpu, Aead& ssl, cudaStream_t stream, std::mt19937_64& rng, int reps,
                int cpu_reps) {
  bool all_ok = true;
  const std::size_t total = c.count * c.length;
  const std::size_t sealed_len = c.length + tt::tee::kTagSize;
  std::vector<std::uint8_t> plain(total);
  for (std::size_t i = 0; i < total; i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(plain.data() + i, &r, std::min<std::size_t>(8, total - i));
  }
  DeviceBytes d_plain(total), d_sealed(c.count * sealed_len), d_opened(total);
  TT_CUDA_CHECK(cudaMemcpy(d_plain.get(), plain.data(), total, cudaMemcpyHostToDevice));
  std::vector<GpuMessage> seal_msgs, open_msgs;
  for (std::size_t i = 0; i < c.count; ++i) {
    seal_msgs.push_back(message(d_plain.as<std::byte>() + i * c.length,
                                d_sealed.as<std::byte>() + i * sealed_len, c.length, i));
    open_msgs.push_back(message(d_sealed.as<std::byte>() + i * sealed_len,
                                d_opened.as<std::byte>() + i * c.length, c.length, i));
  }

  const double seal_ms = time_gpu(stream, 3, reps, [&] { gpu.seal_async(seal_msgs); });
  bool opened = true;
  const double open_ms = time_gpu(stream, 2, reps, [&] {
    const std::vector<bool> ok = gpu.open(open_msgs);
    opened = opened && std::all_of(ok.begin(), ok.end(), [](bool b) { return b; });
  });

  all_ok = spot_check(c, ssl, plain, d_sealed, d_opened) && all_ok;
  if (!opened) {
    std::printf("MISMATCH: %s: GPU open rejected a GPU-sealed message\n", c.name);
    all_ok = false;
  }

  std::vector<std::uint8_t> cpu_sealed(c.count * sealed_len), cpu_plain(total);
  const double cpu_seal_ms = time_cpu(cpu_reps, [&] {
    for (std::size_t i = 0; i < c.count; ++i)
      ssl.seal_append_tag(position(i), aad_of(i), {plain.data() + i * c.length, c.length},
                          {cpu_sealed.data() + i * sealed_len, sealed_len});
  });
  const double cpu_open_ms = time_cpu(cpu_reps, [&] {
    for (std::size_t i = 0; i < c.count; ++i)
      if (!ssl.try_open_with_tag(position(i), aad_of(i), {cpu_sealed.data() + i * sealed_len, sealed_len},
                                 {cpu_plain.data() + i * c.length, c.length}))
        all_ok = false;
  });
  std::printf("%-16s %14.1f %14.1f %14.2f %14.2f %10.1f\n", c.name, gbps(total, seal_ms),
              gbps(total, open_ms), gbps(total, cpu_seal_ms), gbps(total, cpu_open_ms),
              cpu_seal_ms / seal_ms);
  std::fflush(stdout);
  return all_ok;
}

#define TT_CUBLAS_CHECK(x)                                                   \
  do {                                                                       \
    if ((x) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS: " #x); \
  } while (0)

// Milliseconds from `start` (recorded on stream a, which b waits for) to each stream's end.
struct TwoStreams {
  double a_ms, b_ms;
};

// `gemms` FP32 GEMMs of backward's shape (M = B*T 4096, N = 4C 3072, K = C 768: gpt2 at batch 4, seq
// 1024) on stream a, and `seals` seals of 64 x 1 MiB on the GPU AES-GCM's own stream b, alone and
// together; prints one line.
void bench_beside_gemm(GpuAesGcm& gpu, cudaStream_t seal_stream, int gemms, int seals) {
  constexpr int M = 4096, N = 3072, K = 768;
  constexpr std::size_t kMsg = std::size_t{1} << 20, kCount = 64;
  DeviceBytes a(sizeof(float) * M * K), b(sizeof(float) * K * N), c(sizeof(float) * M * N);
  TT_CUDA_CHECK(cudaMemset(a.get(), 0, a.size()));
  TT_CUDA_CHECK(cudaMemset(b.get(), 0, b.size()));
  DeviceBytes plain(kMsg * kCount), sealed((kMsg + tt::tee::kTagSize) * kCount);
  TT_CUDA_CHECK(cudaMemset(plain.get(), 1, plain.size()));
  std::vector<GpuMessage> msgs;
  for (std::size_t i = 0; i < kCount; ++i)
    msgs.push_back(message(plain.as<std::byte>() + i * kMsg,
                           sealed.as<std::byte>() + i * (kMsg + tt::tee::kTagSize), kMsg, i));
  cudaStream_t gemm_stream = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&gemm_stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  TT_CUBLAS_CHECK(cublasCreate(&handle));
  TT_CUBLAS_CHECK(cublasSetStream(handle, gemm_stream));
  const float one = 1.0f, zero = 0.0f;
  const auto gemm = [&] {
    TT_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b.as<float>(), N,
                                a.as<float>(), K, &zero, c.as<float>(), N));
  };
  cudaEvent_t start = nullptr, end_a = nullptr, end_b = nullptr;
  TT_CUDA_CHECK(cudaEventCreate(&start));
  TT_CUDA_CHECK(cudaEventCreate(&end_a));
  TT_CUDA_CHECK(cudaEventCreate(&end_b));
  // One timed run: n_gemm GEMMs and n_seal seals launched alternately, each stream timed from `start`.
  const auto timed = [&](int n_gemm, int n_seal) {
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    TT_CUDA_CHECK(cudaEventRecord(start, gemm_stream));
    TT_CUDA_CHECK(cudaStreamWaitEvent(seal_stream, start, 0));
    for (int i = 0; i < std::max(n_gemm, n_seal); ++i) {
      if (i < n_gemm) gemm();
      if (i < n_seal) gpu.seal_async(msgs);
    }
    TT_CUDA_CHECK(cudaEventRecord(end_a, gemm_stream));
    TT_CUDA_CHECK(cudaEventRecord(end_b, seal_stream));
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    float ta = 0, tb = 0;
    TT_CUDA_CHECK(cudaEventElapsedTime(&ta, start, end_a));
    TT_CUDA_CHECK(cudaEventElapsedTime(&tb, start, end_b));
    return TwoStreams{ta, tb};
  };
  timed(3, 3);  // warm-up: cuBLAS picks its kernel, the key tables are resident
  std::vector<double> g, s, both;
  for (int r = 0; r < 5; ++r) {
    g.push_back(timed(gemms, 0).a_ms);
    s.push_back(timed(0, seals).b_ms);
    const TwoStreams t = timed(gemms, seals);
    both.push_back(std::max(t.a_ms, t.b_ms));
  }
  const double tg = median(g), ts = median(s), tboth = median(both);
  const double overlap = (tg + ts - tboth) / std::min(tg, ts);
  std::printf("beside a GEMM: %d FP32 GEMMs %dx%dx%d alone %.2f ms (%.1f TFLOP/s), %d seals of %zu x 1 MiB alone "
              "%.2f ms (%.1f GB/s), together %.2f ms; serialised %.2f ms, overlapped fully %.2f ms; overlap %.2f "
              "of the shorter (the emulator charges 0)\n",
              gemms, M, N, K, tg, 2.0 * M * N * K * gemms / (tg * 1e-3) / 1e12, seals, kCount, ts,
              gbps(kMsg * kCount * static_cast<std::size_t>(seals), ts), tboth, tg + ts, std::max(tg, ts),
              overlap);
  std::fflush(stdout);
  cublasDestroy(handle);
  TT_CUDA_CHECK(cudaEventDestroy(start));
  TT_CUDA_CHECK(cudaEventDestroy(end_a));
  TT_CUDA_CHECK(cudaEventDestroy(end_b));
  TT_CUDA_CHECK(cudaStreamDestroy(gemm_stream));
}

int run(int reps, int cpu_reps) {
  const int devices = tt::cuda::device_count_or_zero();
  if (devices == 0) {
    std::printf("bench_gpu_aead: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s (%d SMs, sm_%d%d); cipher AES-256-GCM, AAD %zu bytes per message\n", prop.name,
              prop.multiProcessorCount, prop.major, prop.minor, kAadLen);

  std::mt19937_64 rng(42);
  std::vector<std::uint8_t> key(32);
  for (auto& b : key) b = static_cast<std::uint8_t>(rng());
  cudaStream_t stream = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bool all_ok = true;
  {
    GpuAesGcm gpu(key, stream);
    Aead ssl(Cipher::Aes256Gcm, key);
    const Case cases[] = {{"1 x 256 MiB", 1, std::size_t{256} << 20},
                          {"64 x 1 MiB", 64, std::size_t{1} << 20},
                          {"1024 x 64 KiB", 1024, std::size_t{64} << 10}};
    std::printf("%-16s %14s %14s %14s %14s %10s\n", "batch", "GPU seal GB/s", "GPU open GB/s",
                "CPU seal GB/s", "CPU open GB/s", "seal x CPU");
    for (const Case& c : cases) {
      all_ok = bench_case(c, gpu, ssl, stream, rng, reps, cpu_reps) && all_ok;
    }
    bench_beside_gemm(gpu, stream, 40, 40);
  }
  TT_CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("%s\n", all_ok ? "bench_gpu_aead: GPU output matches OpenSSL" : "bench_gpu_aead: FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20, cpu_reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--reps")
      reps = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--cpu-reps")
      cpu_reps = std::max(1, std::atoi(argv[i + 1]));
  }
  try {
    return run(reps, cpu_reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_aead: %s\n", e.what());
    return 1;
  }
}
