#include "bench/sealed_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "comm/secure/sealed_channel.h"

namespace tt::bench {

using comm::Channel;
using comm::ChannelKeys;
using comm::MessageContext;
using comm::SealedChannel;
using comm::SealedChannelOptions;

std::vector<std::size_t> default_crypto_bench_sizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t b = 16; b <= (std::size_t{64} << 20); b *= 4) sizes.push_back(b);
  return sizes;
}

std::vector<CryptoBenchRecord> run_crypto_bench(tee::Cipher cipher, const std::vector<std::size_t>& sizes,
                                                std::size_t threads, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  threads = std::max<std::size_t>(threads, 1);
  // Rank 0's send link is rank 1's receive link: one secret, throwaway.
  const auto link = tee::StreamSecret::random();
  SealedChannelOptions opt;
  opt.cipher = cipher;
  opt.world_size = 2;
  opt.crypto_threads = threads;
  opt.rank = 0;
  SealedChannel sender(opt, ChannelKeys{link.clone(), {}, {}});
  opt.rank = 1;
  SealedChannel receiver(opt, ChannelKeys{{}, link.clone(), {}});

  std::vector<CryptoBenchRecord> out;
  for (const std::size_t size : sizes) {
    std::size_t n = std::clamp<std::size_t>((std::size_t{256} << 10) / std::max<std::size_t>(size, 1), 1, 64);
    n = std::max(threads, n / threads * threads);
    std::vector<std::byte> plain(n * size, std::byte{0x5a});
    std::vector<std::byte> wire(n * (size + SealedChannel::kOverhead));
    std::vector<std::byte> back(n * size);
    std::vector<Channel::SealJob> seals(n);
    std::vector<Channel::OpenJob> opens(n);
    double seal_s = 0;
    double open_s = 0;
    std::size_t batches = 0;
    for (std::uint64_t step = 0; batches < 2 || seal_s < min_seconds || open_s < min_seconds; ++step) {
      for (std::size_t i = 0; i < n; ++i) {
        MessageContext c;
        c.step = step;
        c.chunk = static_cast<std::uint32_t>(i);
        c.sender = 0;
        c.receiver = 1;
        c.length = size;
        const auto w =
            std::span(wire).subspan(i * (size + SealedChannel::kOverhead), size + SealedChannel::kOverhead);
        seals[i] = {c, std::span<const std::byte>(plain).subspan(i * size, size), w};
        opens[i] = {c, w, std::span(back).subspan(i * size, size)};
      }
      const auto t0 = Clock::now();
      sender.seal_batch(seals);
      const auto t1 = Clock::now();
      receiver.open_batch(opens);
      const auto t2 = Clock::now();
      seal_s += std::chrono::duration<double>(t1 - t0).count();
      open_s += std::chrono::duration<double>(t2 - t1).count();
      ++batches;
    }
    const std::size_t messages = batches * n;
    const double total = static_cast<double>(messages * size);
    const std::string name(tee::cipher_name(cipher));
    out.push_back({name, "seal", size, threads, messages, seal_s, total / seal_s / 1e9});
    out.push_back({name, "open", size, threads, messages, open_s, total / open_s / 1e9});
  }
  return out;
}

std::string format_crypto_bench(const std::vector<CryptoBenchRecord>& records) {
  std::string s = "cipher              mode        bytes  threads      GB/s\n";
  for (const auto& r : records) {
    char line[128];
    std::snprintf(line, sizeof line, "%-18s  %-4s  %11zu  %7zu  %8.3f\n", r.cipher.c_str(), r.mode.c_str(),
                  r.bytes, r.threads, r.gbps);
    s += line;
  }
  return s;
}

}  // namespace tt::bench
