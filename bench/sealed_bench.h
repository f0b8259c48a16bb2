// Sealing throughput of the engine (`teetrain bench crypto`): seal and open GB/s per message size and
// crypto thread count, measured through SealedChannel itself (associated data, nonce bookkeeping and
// the thread pool included), so the number is what the ring gets, not a bare EVP loop.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "tee/crypto/aead.h"

namespace tt::bench {

struct CryptoBenchRecord {
  std::string cipher;
  std::string mode;       // "seal" or "open"
  std::size_t bytes = 0;  // plaintext bytes per message
  std::size_t threads = 1;
  std::size_t messages = 0;  // timed messages
  double seconds = 0;
  double gbps = 0;  // plaintext GB/s (1e9 bytes)
};

// For each size: batches of messages are sealed by one channel and opened by its peer (a P = 2 link
// with throwaway keys) until each mode has run at least min_seconds. Batches hold at least `threads`
// messages (up to 4 MiB or 256 messages), as the ring's windows would with segments of that size.
std::vector<CryptoBenchRecord> run_crypto_bench(tee::Cipher cipher, const std::vector<std::size_t>& sizes,
                                                std::size_t threads, double min_seconds = 0.2);

// The default sizes: 16 B .. 64 MiB, times 4.
std::vector<std::size_t> default_crypto_bench_sizes();

// A table: cipher, mode, bytes, threads, GB/s.
std::string format_crypto_bench(const std::vector<CryptoBenchRecord>& records);

}  // namespace tt::bench
