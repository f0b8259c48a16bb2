// fast's device crypto on an emulated GPU (platform/emulated/emulated_device_channel.h): the ring's result is
// the plain sum, every message is charged exactly once as docs/design.md §5's arithmetic says (per-hop vs
// forward-ciphertext all-gather, the ring's and hier's), and the charged time is bytes / rate.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>

#include "comm/allreduce/allreduce_algo.h"
#include "platform/emulated/emulated_device_channel.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt::platform {
namespace {

using namespace tt::comm;  // the transports, channels and rings these platform pieces wrap

using testing::first_wrong;
using testing::pattern_buffer;

struct Charged {
  int64_t sealed = 0, opened = 0, bytes_sealed = 0;
  double modeled_s = 0, seal_phase_s = 0;
};

// node_ranks > 0: the hierarchical all-reduce in nodes of that many ranks, else the ring.
Charged run(int P, bool forward_ag, std::size_t count, std::size_t segment_bytes, double gbps,
            int node_ranks = 0) {
  InprocWorld world(P);
  std::mutex mu;
  Charged total;
  const auto errors = world.run([&](Transport& t) {
    Profiler prof;
    EmulatedDeviceChannel ch(gbps, forward_ag, &prof);
    HostReduceMemory memory;
    Allreducer all(t, ch, memory,
                   RingOptions{.segment_bytes = segment_bytes,
                               .timeout = std::chrono::milliseconds{0},
                               .all_gather = AllGatherMode::PerHop,
                               .tag = tags::kRing,
                               .node_ranks = node_ranks});
    auto v = pattern_buffer(count, t.rank());
    all.allreduce_sum(node_ranks > 0 ? ReduceAlgo::Hier : ReduceAlgo::Ring, v.data(), count,
                      MessageContext{.step = 1});
    EXPECT_EQ(first_wrong(v, P), -1) << "rank " << t.rank();
    std::lock_guard lock(mu);
    total.sealed += prof.count(Counter::MessagesSealed);
    total.opened += prof.count(Counter::MessagesOpened);
    total.bytes_sealed += prof.count(Counter::BytesSealed);
    total.modeled_s += ch.modeled_seconds();
    total.seal_phase_s += prof.seconds(Phase::Seal);
  });
  for (const auto& e : errors) EXPECT_FALSE(e) << "a rank failed";
  return total;
}

TEST(EmulatedDeviceChannel, PerHopChargesEverySealAndOpen) {
  const int P = 4;
  const std::size_t count = 4000;  // 1000 floats per chunk, one segment each (segment 0 = whole chunk)
  const Charged c = run(P, /*forward_ag=*/false, count, 0, 100.0);
  // Per rank: scatter-reduce P-1 seals + P-1 opens; per-hop all-gather P-1 + P-1.
  EXPECT_EQ(c.sealed, P * 2 * (P - 1));
  EXPECT_EQ(c.opened, P * 2 * (P - 1));
  EXPECT_EQ(c.bytes_sealed, int64_t{P} * 2 * (P - 1) * 1000 * 4);
  // Charged time = bytes / rate over seals and opens.
  EXPECT_NEAR(c.modeled_s, 2.0 * static_cast<double>(c.bytes_sealed) / 100e9, 1e-12);
  EXPECT_GT(c.seal_phase_s, 0.0);
}

TEST(EmulatedDeviceChannel, ForwardCiphertextAllGatherSealsOnce) {
  const int P = 4;
  const Charged c = run(P, /*forward_ag=*/true, 4000, 0, 100.0);
  // Per rank: scatter-reduce P-1 seals, all-gather 1 (the owner's hop 0); opens unchanged.
  EXPECT_EQ(c.sealed, P * ((P - 1) + 1));
  EXPECT_EQ(c.opened, P * 2 * (P - 1));
}

// hier's all-gathers forward too (Note [Sub-group streams], comm/channel.h): P = 6 in 2 nodes of 3, per
// rank the node's 2 and the nodes' 1 scatter-reduce hops seal, and each all-gather its first hop only.
TEST(EmulatedDeviceChannel, HierForwardCiphertextSealsOncePerSubGroup) {
  const int P = 6;
  const Charged per_hop = run(P, /*forward_ag=*/false, 6000, 0, 100.0, 3);
  const Charged forward = run(P, /*forward_ag=*/true, 6000, 0, 100.0, 3);
  EXPECT_EQ(per_hop.sealed, P * (2 * 2 + 2 * 1));
  EXPECT_EQ(forward.sealed, P * (2 + 1 + 2));
  EXPECT_EQ(forward.opened, per_hop.opened);
}

TEST(EmulatedDeviceChannel, SegmentsAreChargedPerMessageAndWaitsAreReal) {
  // 2 ranks, 8 MiB: two 4 MiB chunks cut into 64 KiB segments. At 1 GB/s the charged time is spent
  // as real waits, not just reported.
  const std::size_t count = std::size_t{2} << 20;  // floats: 8 MiB
  const auto t0 = std::chrono::steady_clock::now();
  const Charged c = run(2, false, count, 64 << 10, 1.0);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(c.sealed, 2 * 2 * (4 << 20) / (64 << 10));  // 2 ranks x 2 phases x 64 segments
  // Each rank is charged 16 MiB (8 seal + 8 open) at 1 GB/s = 16.8 ms; the ranks run concurrently.
  EXPECT_GE(wall, 0.9 * (16 << 20) / 1e9);
  EXPECT_THROW(EmulatedDeviceChannel(0.0, false, nullptr), InputError);
}

}  // namespace
}  // namespace tt::platform
