// The emulated link (--link emulate): lengths and ordering as a real link, no payload moved, the
// link's rate bounds both the send and the receive, a message longer than the buffer is an error, and
// the ring over it completes with the real message and byte counts. Timing checks are lower bounds
// with loose upper bounds, so a busy machine cannot fail them.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "core/profiler.h"
#include "platform/emulated/emulated_link_transport.h"
#include "tests/common/inproc_transport.h"

namespace tt::platform {
namespace {

using namespace tt::comm;  // the transports, channels and rings these platform pieces wrap

using Clock = std::chrono::steady_clock;

TEST(EmulatedLink, ReportsLengthsMovesNoPayloadAndTakesTheLinkTime) {
  InprocWorld world(2);
  constexpr std::size_t kBytes = 4 << 20;  // 4 MiB at 0.5 GB/s: 8.4 ms per message
  constexpr int kCount = 3;
  double send_s = 0, recv_s = 0;
  // One start for both ranks, taken before either thread runs: a per-thread start would let the
  // receiver's clock begin after the sender had already booked part of the link time.
  const auto t0 = Clock::now();
  const auto errors = world.run([&](Transport& t) {
    EmulatedLinkTransport link(t, {0.5, {}});
    EXPECT_EQ(link.name(), "emulated-link(0.5 GB/s)");
    if (t.rank() == 0) {
      std::vector<std::byte> payload(kBytes, std::byte{0x5a});
      std::vector<Request> reqs;
      for (int i = 0; i < kCount; ++i)
        reqs.push_back(
            link.isend(1, std::span(payload).first(kBytes - static_cast<std::size_t>(i)), tags::kUser));
      link.wait_all(reqs);
      send_s = std::chrono::duration<double>(Clock::now() - t0).count();
      for (int i = 0; i < kCount; ++i)
        EXPECT_EQ(reqs[static_cast<std::size_t>(i)].bytes(), kBytes - static_cast<std::size_t>(i));
    } else {
      std::vector<std::byte> buf(kBytes, std::byte{0x11});
      for (int i = 0; i < kCount; ++i) {
        Request r = link.irecv(0, buf, tags::kUser);
        EXPECT_EQ(link.wait(r), kBytes - static_cast<std::size_t>(i));  // in order, full length
      }
      recv_s = std::chrono::duration<double>(Clock::now() - t0).count();
      EXPECT_EQ(buf[0], std::byte{0x11});  // the payload never crossed
      EXPECT_EQ(buf[kBytes - 1], std::byte{0x11});
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  const double wire = kCount * static_cast<double>(kBytes - 1) / 0.5e9;
  EXPECT_GE(send_s, wire);
  EXPECT_GE(recv_s, wire);  // arrival = the sender's booked time (same clock, same start)
  EXPECT_LT(send_s, wire + 2.0);
}

TEST(EmulatedLink, MessageLongerThanTheBufferIsAnError) {
  InprocWorld world(2);
  std::string what;
  const auto errors = world.run([&](Transport& t) {
    EmulatedLinkTransport link(t, {100.0, {}});
    if (t.rank() == 0) {
      std::vector<std::byte> payload(4096);
      Request s = link.isend(1, payload, tags::kUser);
      link.wait(s);
    } else {
      std::vector<std::byte> buf(1000);
      Request r = link.irecv(0, buf, tags::kUser);
      try {
        link.wait(r);
      } catch (const RunError& e) {
        what = e.what();
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  EXPECT_NE(what.find("a message of 4096 bytes from rank 0 (tag 1000) is longer than the receive buffer of "
                      "1000 bytes"),
            std::string::npos)
      << what;
}

TEST(EmulatedLink, NeedsARate) {
  InprocWorld world(1);
  EXPECT_THROW(EmulatedLinkTransport(world.transport(0), {0.0, {}}), InputError);
}

// An emulated GPU's ring memory as the ring sees it (platform/emulated/emulated_reduce_memory.h): adds are
// modelled, here only counted.
class CountingMemory final : public ReduceMemory {
 public:
  MemorySpace space() const override { return MemorySpace::Host; }
  ReduceScratch scratch(std::size_t reduce_floats, std::size_t wire_bytes) override {
    return host_.scratch(reduce_floats, wire_bytes);
  }
  std::size_t scratch_bytes() const override { return host_.scratch_bytes(); }
  void add_into(float* /*dst*/, const float* /*src*/, std::size_t n) override { added += n; }
  comm::SendSchedule send_schedule() const override { return comm::SendSchedule::InOrder; }
  std::size_t added = 0;

 private:
  HostReduceMemory host_;
};

TEST(EmulatedLink, RingCompletesWithRealCountsAndEmulatedReduce) {
  constexpr int kRanks = 3;
  constexpr std::size_t kCount = 300001;
  InprocWorld world(kRanks);
  std::vector<std::size_t> reduced(kRanks, 0);
  std::vector<int64_t> sent(kRanks, 0);
  const auto errors = world.run([&](Transport& t) {
    EmulatedLinkTransport link(t, {50.0, {}});
    Profiler prof(false);
    RingOptions opt;
    opt.segment_bytes = 64 << 10;
    CountingMemory memory;
    PlainChannel plain;
    RingAllreduce ring(link, plain, memory, opt, &prof);
    std::vector<float> v(kCount, 1.0f);
    ring.allreduce_sum(v.data(), v.size(), MessageContext{.step = 1});
    reduced[static_cast<std::size_t>(t.rank())] = memory.added;
    sent[static_cast<std::size_t>(t.rank())] = prof.count(Counter::BytesSent);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  for (int r = 0; r < kRanks; ++r) {
    // Each rank adds P-1 incoming chunks and sends 2(P-1) chunks: the real ring's arithmetic.
    const std::size_t chunk = kCount / kRanks;  // 100000 or 100001 each
    EXPECT_NEAR(static_cast<double>(reduced[static_cast<std::size_t>(r)]), 2.0 * chunk, 2.0) << "rank " << r;
    EXPECT_NEAR(static_cast<double>(sent[static_cast<std::size_t>(r)]), 4.0 * chunk * sizeof(float), 16.0)
        << "rank " << r;
  }
}

}  // namespace
}  // namespace tt::platform
