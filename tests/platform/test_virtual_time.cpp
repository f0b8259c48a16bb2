// Virtual time (Note [Virtual time], core/run_clock.h): per-thread clocks, links booked in the
// sender's time and delivered at max(receiver, arrival), sealed tokens that a flipped byte breaks,
// and a sealed ring whose time is exactly the modelled crypto and links — the same on every run,
// whatever the machine is doing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/secure/sealed_channel.h"
#include "core/emulated/virtual_clock.h"
#include "core/profiler.h"
#include "platform/emulated/emulated_link_transport.h"
#include "platform/emulated/virtual_seal_channel.h"
#include "tee/digest.h"
#include "tests/common/inproc_transport.h"

namespace tt::platform {
namespace {

using namespace tt::comm;  // the transports, channels and rings these platform pieces wrap

double seconds(RunClock::TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

TEST(VirtualClock, EachThreadHasItsOwnTimeAndWaitingIsAMax) {
  VirtualClock clock;
  EXPECT_TRUE(clock.is_virtual());
  EXPECT_EQ(seconds(clock.now()), 0.0);
  clock.elapse(0.25);
  clock.advance_to(RunClock::TimePoint(clock_seconds(0.1)));  // in the past: no change
  EXPECT_DOUBLE_EQ(seconds(clock.now()), 0.25);
  double other = -1;
  std::thread t([&] {
    clock.elapse(1.0);  // a new thread starts at zero
    other = seconds(clock.now());
  });
  t.join();
  EXPECT_DOUBLE_EQ(other, 1.0);
  EXPECT_DOUBLE_EQ(seconds(clock.now()), 0.25);  // untouched by the other thread
  clock.advance_to(RunClock::TimePoint(clock_seconds(2.0)));
  EXPECT_DOUBLE_EQ(seconds(clock.now()), 2.0);
}

// A message sent at the sender's time 1 ms arrives after its bytes cross at the link's rate; the
// receiver, at time 0, waits for it (a max); one already in the past costs it nothing. Nothing is
// slept: the test takes microseconds although the modelled link time is a second.
TEST(VirtualLink, ArrivalIsTheSendersTimePlusTheLinkAndNothingIsSlept) {
  InprocWorld world(2);
  VirtualClock clock;  // one per rank in a run; in-process ranks are threads, each its own time here
  constexpr std::size_t kBytes = 1'000'000;  // 1 MB at 1 GB/s: 1 ms; the second message at 0.001 GB/s: 1 s
  double t1 = 0, t2 = 0, link_s = -1, wait_s = -1;
  const auto wall = std::chrono::steady_clock::now();
  const auto errors = world.run([&](Transport& t) {
    Profiler prof;
    EmulatedLinkTransport link(t, {1.0, {}}, &clock, 8, &prof);
    std::vector<std::byte> buf(kBytes, std::byte{0x11});
    if (t.rank() == 0) {
      clock.elapse(1e-3);
      for (std::size_t i = 0; i < 8; ++i) buf[i] = std::byte{static_cast<unsigned char>(i + 1)};
      Request s = link.isend(1, buf, tags::kUser);
      link.wait(s);
      EXPECT_DOUBLE_EQ(seconds(clock.now()), 1e-3);  // a sender does not wait for its link
      Request s2 = link.isend(1, std::span(buf).first(10), tags::kUser);
      link.wait(s2);
    } else {
      Request r = link.irecv(0, buf, tags::kUser);
      EXPECT_EQ(link.wait(r), kBytes);
      t1 = seconds(clock.now());
      EXPECT_EQ(buf[0], std::byte{1});  // the carried bytes landed ...
      EXPECT_EQ(buf[7], std::byte{8});
      EXPECT_EQ(buf[8], std::byte{0x11});  // ... and nothing else
      clock.elapse(5.0);                   // the next message arrived long ago
      Request r2 = link.irecv(0, buf, tags::kUser);
      EXPECT_EQ(link.wait(r2), 10u);
      t2 = seconds(clock.now());
      link_s = prof.seconds(Phase::Link);  // the first message's 1 ms on the link ...
      wait_s = prof.seconds(Phase::Wait);  // ... after 1 ms of waiting for the sender to send it
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  EXPECT_NEAR(t1, 1e-3 + 1e-3, 1e-9);
  EXPECT_NEAR(t2, t1 + 5.0, 1e-9);
  EXPECT_NEAR(link_s, 1e-3, 1e-8);
  EXPECT_NEAR(wait_s, 1e-3, 1e-8);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(), 30.0);
}

tee::SecretBytes secret(const std::string& label) {
  const auto d = tee::sha256(label);
  return tee::SecretBytes(tee::ByteView(d));
}

std::unique_ptr<SealedChannel> sealed_channel(int rank, int p, Profiler* prof) {
  ChannelKeys k;
  k.send = tee::StreamSecret(secret("link " + std::to_string(rank)));
  k.recv = tee::StreamSecret(secret("link " + std::to_string((rank + p - 1) % p)));
  k.group = tee::GroupTrafficSecret(secret("group"));
  SealedChannelOptions o;
  o.rank = rank;
  o.world_size = p;
  return std::make_unique<SealedChannel>(o, std::move(k), prof);
}

struct RingRun {
  std::vector<double> end_s;  // per rank, the virtual time when the all-reduce returned
  std::vector<std::array<int64_t, Profiler::kCounters>> counters;
  std::vector<std::exception_ptr> errors;
};

// A sealed ring of P in-process ranks in virtual time: one bucket of `count` floats, one message per
// chunk (cc), the host model's crypto. `flip`: rank 0 flips a byte of its first sealed token.
RingRun sealed_ring(int p, std::size_t count, const CryptoCostModel& host, bool flip) {
  InprocWorld world(p);
  VirtualClock clock;
  RingRun out;
  out.end_s.resize(static_cast<std::size_t>(p));
  out.counters.resize(static_cast<std::size_t>(p));
  out.errors = world.run([&](Transport& t) {
    Profiler prof;
    prof.use_clock(clock);
    auto sealed = sealed_channel(t.rank(), p, &prof);
    VirtualSealChannel channel(*sealed, host, clock, &prof);
    EmulatedLinkTransport link(t, {100.0, {}}, &clock, channel.carried_bytes());
    struct Flipper final : Transport {
      Transport& inner;
      bool armed;
      Flipper(Transport& i, bool a) : inner(i), armed(a) {}
      int rank() const override { return inner.rank(); }
      int size() const override { return inner.size(); }
      std::string name() const override { return "flipper"; }
      Request isend(int peer, std::span<const std::byte> d, int tag) override {
        if (!armed) return inner.isend(peer, d, tag);
        armed = false;
        copy.assign(d.begin(), d.end());
        copy[EmulatedLinkTransport::kHeaderBytes + 3] ^= std::byte{0x40};  // inside the sealed token
        return inner.isend(peer, copy, tag);
      }
      Request irecv(int peer, std::span<std::byte> b, int tag) override { return inner.irecv(peer, b, tag); }
      std::vector<std::byte> copy;
    } flipper(t, flip && t.rank() == 0);
    EmulatedLinkTransport flipped(flipper, {100.0, {}}, &clock, channel.carried_bytes());
    RingOptions ro;
    ro.segment_bytes = 0;
    ro.timeout =
        std::chrono::milliseconds(flip ? 2000 : 10000);  // the flip stops one rank; the other times out
    RingAllreduce ring(flip ? flipped : link, channel, ro, &prof);
    std::vector<float> data(count, 1.0f);
    MessageContext id;
    ring.allreduce_sum(data.data(), data.size(), id);
    out.end_s[static_cast<std::size_t>(t.rank())] = seconds(clock.now());
    out.counters[static_cast<std::size_t>(t.rank())] = prof.counter_totals();
  });
  return out;
}

// Every hop seals one chunk and opens one: 2(P-1) hops of (seal + link + open) on the critical path.
TEST(VirtualSealChannel, SealedRingTakesTheModelledTimeOnEveryRunAndCountsFullLengths) {
  constexpr int kP = 3;
  constexpr std::size_t kCount = 3 * 250'000;  // 1 MB chunks
  CryptoCostModel host;
  host.aead_gbps = 1.0;  // 1 ms per chunk to seal, 1 ms to open
  const RingRun a = sealed_ring(kP, kCount, host, false);
  const RingRun b = sealed_ring(kP, kCount, host, false);
  const double chunk = 1e6;
  const double hop = chunk / 1e9 + chunk / 100e9 + chunk / 1e9;  // seal, link, open
  for (int r = 0; r < kP; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_EQ(a.errors[i], nullptr);
    EXPECT_NEAR(a.end_s[i], 2 * (kP - 1) * hop, 1e-6) << "rank " << r;
    EXPECT_EQ(a.end_s[i], b.end_s[i]) << "rank " << r;  // deterministic, to the tick
    EXPECT_EQ(a.counters[i][static_cast<int>(Counter::BytesSealed)], 2 * (kP - 1) * 1'000'000);
    EXPECT_EQ(a.counters[i][static_cast<int>(Counter::BytesOpened)], 2 * (kP - 1) * 1'000'000);
    EXPECT_EQ(a.counters[i][static_cast<int>(Counter::RingSealed)], 2 * (kP - 1));
  }
  // Two crypto cores do not help a hop with one message; the re-encrypted bounce buffers double it.
  host.cores = 2;
  EXPECT_EQ(sealed_ring(kP, kCount, host, false).end_s[0], a.end_s[0]);
  host.bounce_reencrypt = true;
  EXPECT_NEAR(sealed_ring(kP, kCount, host, false).end_s[0], 2 * (kP - 1) * (hop + 2 * chunk / 1e9), 1e-6);
}

TEST(VirtualSealChannel, AFlippedTokenFailsTheTagCheck) {
  const RingRun run = sealed_ring(2, 1000, CryptoCostModel{}, true);
  bool integrity = false;
  for (const auto& e : run.errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const IntegrityError& ie) {
      integrity = integrity || std::string(ie.what()).find("tag mismatch") != std::string::npos;
    } catch (...) {
    }
  }
  EXPECT_TRUE(integrity);
}

TEST(VirtualSealChannel, CostModel) {
  CryptoCostModel m;
  m.aead_gbps = 2.0;
  m.cores = 4;
  EXPECT_DOUBLE_EQ(m.seconds(0, 100), 0.0);
  EXPECT_DOUBLE_EQ(m.seconds(1, 2'000'000), 1e-3);  // one message: one core
  EXPECT_DOUBLE_EQ(m.seconds(8, 8'000'000), 1e-3);  // eight over four cores
  m.per_message_us = 10;
  EXPECT_DOUBLE_EQ(m.seconds(4, 0), 10e-6);
  EXPECT_EQ(m.describe(), "host AES-GCM 2 GB/s x 4 cores, 10 us per message");
  m.where = "GPU";
  m.per_message_us = 0;
  EXPECT_EQ(m.describe(), "GPU AES-GCM 2 GB/s");
}

}  // namespace
}  // namespace tt::platform
