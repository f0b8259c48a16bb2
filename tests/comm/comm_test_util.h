// Helpers shared by the comm tests: exact integer test patterns and a toy non-pass-through channel.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/channel.h"

namespace tt::comm::testing {

// Integer-valued, never zero (a flipped bit always shows), small enough that sums over ranks are exact.
inline float pattern(std::size_t i, int rank) {
  return static_cast<float>(1 + ((i % 1024) * 7 + static_cast<std::size_t>(rank) * 3) % 17);
}
inline std::vector<float> pattern_buffer(std::size_t n, int rank) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = pattern(i, rank);
  return v;
}
inline float expected_sum(std::size_t i, int ranks) {
  float s = 0;
  for (int r = 0; r < ranks; ++r) s += pattern(i, r);
  return s;
}
// Index of the first wrong element, or -1.
inline long first_wrong(const std::vector<float>& v, int ranks) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != expected_sum(i, ranks)) return static_cast<long>(i);
  }
  return -1;
}

// FNV-1a over every MessageContext field and the bytes: the stand-in "tag" of the test channels
// (host ChecksumChannel here, the device ring's TagDeviceCodec, a device-memory Channel). Any changed byte or
// field shows.
inline std::uint64_t context_checksum(const MessageContext& c, std::span<const std::byte> data) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 1099511628211ULL;
    }
  };
  for (std::uint64_t v : {c.step, std::uint64_t{c.bucket}, std::uint64_t{static_cast<std::uint8_t>(c.phase)},
                          std::uint64_t{c.hop}, std::uint64_t{c.chunk}, std::uint64_t{c.segment},
                          static_cast<std::uint64_t>(c.origin), static_cast<std::uint64_t>(c.sender),
                          static_cast<std::uint64_t>(c.receiver), c.length}) {
    mix(v);
  }
  for (std::byte b : data) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 1099511628211ULL;
  }
  return h;
}

// A stand-in for the sealed channel: wire = plaintext + 8-byte FNV-1a hash over (context, plaintext).
// Not security, but it exercises the whole non-pass-through path of the ring (seal/open, overhead,
// forward-wire all-gather) and fails to open on any change of bytes or of context, like AEAD would.
class ChecksumChannel final : public Channel {
 public:
  static constexpr std::size_t kOverhead = 8;
  std::string name() const override { return "checksum"; }
  std::size_t overhead() const override { return kOverhead; }
  bool pass_through() const override { return false; }

  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override {
    if (wire.size() != plain.size() + kOverhead) throw RunError("checksum seal: bad wire size");
    if (!plain.empty()) std::memcpy(wire.data(), plain.data(), plain.size());
    const std::uint64_t h = context_checksum(ctx, plain);
    std::memcpy(wire.data() + plain.size(), &h, kOverhead);
    seals.fetch_add(1);
  }

  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override {
    if (wire.size() != plain.size() + kOverhead)
      throw RunError("checksum open: bad wire size at " + to_string(ctx));
    std::uint64_t h = 0;
    std::memcpy(&h, wire.data() + plain.size(), kOverhead);
    if (h != context_checksum(ctx, wire.first(plain.size())))
      throw RunError("checksum open failed at " + to_string(ctx));
    if (!plain.empty()) std::memcpy(plain.data(), wire.data(), plain.size());
    opens.fetch_add(1);
  }

  // > 1 makes the ring hand over windows of segments (seal_batch/open_batch), as a crypto pool would.
  std::size_t parallelism() const override { return batch; }
  std::size_t batch = 1;
  std::atomic<int> seals{0};
  std::atomic<int> opens{0};
};

}  // namespace tt::comm::testing
