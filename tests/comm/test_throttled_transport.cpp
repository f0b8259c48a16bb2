// The throttled transport: delivery unchanged, and a link never runs faster than its limit.
// Timing checks are lower bounds with a loose upper bound, so a busy machine cannot fail them.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "comm/transport/throttled_transport.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Rank 0 sends `count` messages of `bytes` to rank 1 through a throttle; returns rank 0's seconds.
double send_through(const LinkLimit& limit, int count, std::size_t bytes) {
  InprocWorld world(2);
  double seconds = 0;
  const auto errors = world.run([&](Transport& t) {
    ThrottledTransport tt(t, limit);
    EXPECT_EQ(tt.rank(), t.rank());
    EXPECT_EQ(tt.size(), 2);
    if (t.rank() == 0) {
      std::vector<std::vector<std::byte>> msgs(static_cast<std::size_t>(count),
                                               std::vector<std::byte>(bytes));
      for (int i = 0; i < count; ++i) {
        for (std::size_t k = 0; k < bytes; k += 4096) msgs[static_cast<std::size_t>(i)][k] = std::byte(i + 1);
      }
      const auto t0 = Clock::now();
      std::vector<Request> reqs;
      for (auto& m : msgs) reqs.push_back(tt.isend(1, m, tags::kUser));
      tt.wait_all(reqs);
      seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      for (auto& r : reqs) EXPECT_EQ(r.bytes(), bytes);
    } else {
      std::vector<std::byte> buf(bytes);
      for (int i = 0; i < count; ++i) {
        Request r = tt.irecv(0, buf, tags::kUser);
        EXPECT_EQ(tt.wait(r), bytes);
        EXPECT_EQ(buf[0], std::byte(i + 1));
        EXPECT_EQ(buf[(bytes - 1) / 4096 * 4096], std::byte(i + 1));
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  return seconds;
}

TEST(ThrottledTransport, LinkRateBoundsThroughput) {
  // 8 x 1 MiB at 0.2 GB/s: at least 42 ms on the wire.
  const double s = send_through({0.2, std::chrono::microseconds(0)}, 8, std::size_t{1} << 20);
  const double wire = 8.0 * (1 << 20) / 0.2e9;
  EXPECT_GE(s, wire);
  EXPECT_LT(s, wire + 2.0);
}

TEST(ThrottledTransport, LatencyAddsPerMessage) {
  const double s = send_through({0, std::chrono::microseconds(2000)}, 10, 4096);
  EXPECT_GE(s, 10 * 2e-3);
}

TEST(ThrottledTransport, UnlimitedIsAPassThrough) {
  const double s = send_through({}, 4, 1 << 16);
  EXPECT_LT(s, 2.0);
  InprocWorld world(1);
  EXPECT_THROW(ThrottledTransport(world.transport(0), {-1.0, {}}), std::exception);
  ThrottledTransport t(world.transport(0), {1.0, {}});
  EXPECT_DOUBLE_EQ(t.link_seconds(1'000'000'000), 1.0);
  EXPECT_EQ(t.name(), "throttled(inproc)");
}

}  // namespace
}  // namespace tt::comm
