// Sealing and opening throughput per cipher and message size, single thread (Google Benchmark).
// Sizes 16 B .. 64 MiB in powers of 4. bytes_per_second is plaintext bytes; compare the 16 KiB
// AES-256-GCM row with `openssl speed -evp aes-256-gcm -bytes 16384` on the same machine.
//   build/tests/bench/bench_crypto --benchmark_filter='Seal/aes-256-gcm'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tee/crypto/aead.h"
#include "tee/crypto/stream_position.h"
#include "tee/secure_bytes.h"

namespace {

using tt::tee::Aead;
using tt::tee::Cipher;

constexpr std::uint8_t kAad[40] = {};  // the secure channel's context is about this size

void run(benchmark::State& state, Cipher cipher, bool open) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const tt::tee::SecretBytes key = tt::tee::SecretBytes::random(tt::tee::cipher_key_size(cipher));
  Aead aead(cipher, key.view());
  std::vector<std::uint8_t> pt(n, 0x5a), ct(n), out(n);
  tt::tee::Tag tag{};
  tt::tee::MessageCounter seq(0);
  // Open always verifies the same message (as a receiver would, once per message): seal it once.
  const tt::tee::StreamPosition fixed = seq.next();
  aead.seal(fixed, kAad, pt, ct, tag);
  for (auto _ : state) {
    if (open) {
      if (!aead.try_open(fixed, kAad, ct, tag, out)) state.SkipWithError("open failed");
    } else {
      aead.seal(seq.next(), kAad, pt, ct, tag);
    }
    benchmark::DoNotOptimize(tag.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.SetLabel(std::string(tt::tee::cipher_name(cipher)));
}

void register_all() {
  for (Cipher c : {Cipher::Aes256Gcm, Cipher::Aes128Gcm, Cipher::ChaCha20Poly1305}) {
    for (bool open : {false, true}) {
      const std::string name = std::string(open ? "Open/" : "Seal/") + std::string(tt::tee::cipher_name(c));
      auto* b =
          benchmark::RegisterBenchmark(name.c_str(), [c, open](benchmark::State& s) { run(s, c, open); });
      for (std::int64_t size = 16; size <= (std::int64_t{64} << 20); size *= 4) b->Arg(size);
      b->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
