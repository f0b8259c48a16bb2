// CcTransferChannel (--cc-transfer-us): the wrapped channel's bytes are unchanged, one crossing is
// charged before every seal and after every open, crossings never overlap (one bridge per rank), the
// waits are reported as the stage phase, and a ring over it completes with the plain ring's sums and
// 2 x 2(P-1) crossings per rank and bucket. Timing checks are lower bounds only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "core/emulated/virtual_clock.h"
#include "core/profiler.h"
#include "platform/emulated/cc_transfer_channel.h"
#include "tests/common/inproc_transport.h"

namespace tt::platform {
namespace {

using namespace tt::comm;  // the transports, channels and rings these platform pieces wrap

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A stand-in for the sealing channel: not pass-through (so the ring calls seal/open), wire = plaintext
// with every byte inverted, and a count of calls.
class InvertingChannel final : public Channel {
 public:
  std::string name() const override { return "inverting"; }
  std::size_t overhead() const override { return 0; }
  bool pass_through() const override { return false; }
  void seal(const MessageContext&, std::span<const std::byte> plain, std::span<std::byte> wire) override {
    for (std::size_t i = 0; i < plain.size(); ++i) wire[i] = ~plain[i];
    ++seals;
  }
  void open(const MessageContext&, std::span<const std::byte> wire, std::span<std::byte> plain) override {
    for (std::size_t i = 0; i < wire.size(); ++i) plain[i] = ~wire[i];
    ++opens;
  }
  std::atomic<int> seals = 0, opens = 0;  // two threads seal at once in the batch test
};

TEST(CcTransferChannel, ForwardsBytesAndChargesOneCrossingPerSealAndOpen) {
  InvertingChannel inner;
  Profiler prof;
  CcTransferChannel ch(inner, 2000.0, &prof);  // 2 ms per crossing
  EXPECT_EQ(ch.name(), "inverting, cc transfers (2000 us each)");
  EXPECT_FALSE(ch.pass_through());
  const std::vector<std::byte> plain{std::byte{1}, std::byte{2}, std::byte{3}};
  std::vector<std::byte> wire(3), back(3);
  const auto t0 = Clock::now();
  ch.seal(MessageContext{}, plain, wire);
  ch.open(MessageContext{}, wire, back);
  const double s = since(t0);
  EXPECT_EQ(wire[0], ~std::byte{1});  // the inner channel's wire bytes, unchanged
  EXPECT_EQ(back, plain);
  EXPECT_EQ(inner.seals, 1);
  EXPECT_EQ(inner.opens, 1);
  EXPECT_EQ(ch.crossings(), 2);
  EXPECT_GE(s, 4e-3);
  EXPECT_GE(prof.seconds(Phase::Stage), 4e-3);
  EXPECT_LT(prof.seconds(Phase::Stage), s + 1e-3);
}

TEST(CcTransferChannel, BatchesChargeEveryMessageAndThreadsShareOneBridge) {
  InvertingChannel inner;
  CcTransferChannel ch(inner, 1000.0, nullptr);
  const std::vector<std::byte> plain(8);
  // Each thread seals into its own wire buffer, as two ranks' rings would.
  std::vector<std::byte> wire_a(8 * 5), wire_b(8 * 5);
  std::vector<Channel::SealJob> jobs_a, jobs_b;
  for (int i = 0; i < 5; ++i) {
    const auto at = static_cast<std::size_t>(i) * 8;
    jobs_a.push_back({MessageContext{}, plain, std::span(wire_a).subspan(at, 8)});
    jobs_b.push_back({MessageContext{}, plain, std::span(wire_b).subspan(at, 8)});
  }
  const auto t0 = Clock::now();
  // Two threads each seal a batch of 5: 10 crossings in a row on the one bridge, >= 10 ms in all.
  std::thread other([&] { ch.seal_batch(jobs_a); });
  ch.seal_batch(jobs_b);
  other.join();
  EXPECT_GE(since(t0), 10e-3);
  EXPECT_EQ(ch.crossings(), 10);
  EXPECT_EQ(inner.seals, 10);
}

// A GPU in CC mode (--cc-hardware): each crossing also costs its bytes, device -> host before a seal
// and host -> device after an open, each at its own rate; in virtual time nothing is waited for.
TEST(CcTransferChannel, ChargesEachCrossingsBytesInItsDirection) {
  InvertingChannel inner;
  VirtualClock clock;
  Profiler prof;
  CcTransferChannel ch(inner, 10.0, &prof, &clock, {.d2h_s = 1e-9, .h2d_s = 2e-9});
  EXPECT_EQ(ch.name(), "inverting, cc transfers (10.0 us each + 1.000/2.000 ns/B)");
  const std::vector<std::byte> plain(1000, std::byte{5});
  std::vector<std::byte> wire(1000), back(1000);
  const auto t0 = clock.now();
  ch.seal(MessageContext{}, plain, wire);
  EXPECT_NEAR(std::chrono::duration<double>(clock.now() - t0).count(), 10e-6 + 1e-6, 1e-9);
  ch.open(MessageContext{}, wire, back);
  EXPECT_NEAR(std::chrono::duration<double>(clock.now() - t0).count(), 2 * 10e-6 + 3e-6, 1e-9);
  EXPECT_EQ(back, plain);
  EXPECT_EQ(ch.crossings(), 2);
  EXPECT_THROW(CcTransferChannel(inner, 10.0, nullptr, nullptr, {.d2h_s = -1e-9, .h2d_s = 0}), InputError);
}

TEST(CcTransferChannel, NeedsAPositiveToll) {
  InvertingChannel inner;
  EXPECT_THROW(CcTransferChannel(inner, 0.0, nullptr), InputError);
  EXPECT_THROW(CcTransferChannel(inner, -5.0, nullptr), InputError);
}

TEST(CcTransferChannel, RingGivesThePlainSumsAndChargesTwoCrossingsPerHop) {
  constexpr int kRanks = 3;
  constexpr int kBuckets = 2;
  constexpr std::size_t kCount = 3001;
  constexpr double kTollUs = 500;
  InprocWorld world(kRanks);
  std::vector<long> crossings(kRanks, 0);
  std::vector<std::vector<float>> out(kRanks);
  const auto t0 = Clock::now();
  const auto errors = world.run([&](Transport& t) {
    InvertingChannel inner;
    CcTransferChannel ch(inner, kTollUs, nullptr);
    RingAllreduce ring(t, ch, RingOptions{}, nullptr);
    std::vector<float> v(kCount);
    for (int b = 0; b < kBuckets; ++b) {
      for (std::size_t i = 0; i < kCount; ++i)
        v[i] = static_cast<float>(t.rank() + 1) * static_cast<float>(i % 7);
      ring.allreduce_sum(v.data(), v.size(), MessageContext{.step = 1, .bucket = static_cast<uint32_t>(b)});
    }
    crossings[static_cast<std::size_t>(t.rank())] = ch.crossings();
    out[static_cast<std::size_t>(t.rank())] = v;
  });
  const double s = since(t0);
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  for (int r = 0; r < kRanks; ++r) {
    // Per bucket and rank: 2(P-1) sends, each sealed after a device -> host crossing, and 2(P-1)
    // receives, each opened and then crossing host -> device.
    EXPECT_EQ(crossings[static_cast<std::size_t>(r)], kBuckets * 2 * 2 * (kRanks - 1)) << "rank " << r;
    for (std::size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(out[static_cast<std::size_t>(r)][i], 6.0f * static_cast<float>(i % 7))
          << "rank " << r << " i " << i;
  }
  // Every hop waits for its sender's crossing and its own: the ring takes at least 2 tolls per hop.
  EXPECT_GE(s, kBuckets * 2 * (kRanks - 1) * 2 * kTollUs * 1e-6);
}

}  // namespace
}  // namespace tt::platform
