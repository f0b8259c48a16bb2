// comm/ under mpirun (CTest runs this binary with P = 1, 2, 3, 4): ring all-reduce, collectives,
// timeouts and short messages over MpiTransport (test_comm_mpi) and over ShmTransport (the same source
// built as test_comm_shm), and the MPI_Allreduce baseline (the bench's rows:
// tests/engine/test_bench_paths.cpp).
//
// MPI init/finalize: tt_test links GTest::gtest_main, so this file has no main(). A gtest global
// environment (registered below, before main runs) holds the MpiSession for the whole RUN_ALL_TESTS.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "base/error.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/collectives.h"
#include "comm/transport/mpi_allreduce.h"
#include "comm/transport/mpi_transport.h"
#include "comm/transport/shared_buffer.h"
#include "comm/transport/shm_transport.h"
#include "core/profiler.h"
#include "tests/comm/comm_test_util.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm {
namespace {

using testing::ChecksumChannel;
using testing::first_wrong;
using testing::pattern_buffer;

// The transport under test: MpiTransport, or (built as test_comm_shm) ShmTransport over it, with small
// slots so that long messages and full channels are exercised as well as inline ones.
struct TestLink {
  MpiTransport mpi;
#ifdef TT_TEST_SHM
  ShmTransport t{mpi, ShmLayout{.slot_bytes = 4096, .slots = 4}};
#else
  MpiTransport& t = mpi;
#endif
};

std::vector<std::size_t> counts_for(int p) {
  const auto P = static_cast<std::size_t>(p);
  return {0, 1, P - 1, P, P + 1, 1000, (std::size_t{1} << 20) + 3};
}

// Every rank's result must be bit-identical: gather a copy of the bytes' hash and compare.
void expect_replicas_identical(Collectives& coll, const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ULL;
  for (float f : v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    h = (h ^ bits) * 1099511628211ULL;
  }
  const auto all = coll.allgather(std::as_bytes(std::span(&h, 1)));
  EXPECT_EQ(first_mismatch(all, sizeof h), -1);
}

TEST(MpiRing, ExactSumsForAllCountsAndSegmentSizes) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  const int p = t.size();
  for (std::size_t seg : {std::size_t{0}, std::size_t{12}, std::size_t{4096}, std::size_t{1} << 20}) {
    RingOptions opt;
    opt.segment_bytes = seg;
    RingAllreduce ring(t, opt);
    for (std::size_t n : counts_for(p)) {
      if (seg != 0 && seg < 4096 && n > 10'000) continue;  // 3-float segments of 1M floats: too many messages
      auto v = pattern_buffer(n, t.rank());
      ring.allreduce_sum(v.data(), n, MessageContext{});
      EXPECT_EQ(first_wrong(v, p), -1) << "P=" << p << " count=" << n << " segment_bytes=" << seg;
    }
  }
}

TEST(MpiRing, ReusedRingAndRandomFloatsAreIdenticalOnEveryRank) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  Profiler prof;
  RingAllreduce ring(t, RingOptions{.segment_bytes = 8192}, &prof);
  for (std::size_t n :
       {std::size_t{100'000}, std::size_t{777}, std::size_t{100'001}}) {  // grow, shrink, grow
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = 0.001f * static_cast<float>((i * 2654435761U + 97U * static_cast<unsigned>(t.rank())) % 10007);
    ring.allreduce_sum(v.data(), n, MessageContext{});
    expect_replicas_identical(coll, v);
  }
  if (t.size() > 1) {
    EXPECT_GT(prof.count(Counter::MessagesSent), 0);
    // Chunks differ by one element, so per rank sent != received; summed over ranks they match.
    const std::array<int64_t, 2> mine{prof.count(Counter::BytesSent), prof.count(Counter::BytesReceived)};
    const auto all = coll.allgather(std::as_bytes(std::span(mine)));
    std::vector<int64_t> v(all.size() / sizeof(int64_t));
    std::memcpy(v.data(), all.data(), all.size());
    int64_t sent = 0, received = 0;
    for (std::size_t i = 0; i < v.size(); i += 2) {
      sent += v[i];
      received += v[i + 1];
    }
    EXPECT_EQ(sent, received);
  }
}

TEST(MpiRing, SealedPathBothAllGatherModes) {
  TestLink link;
  auto& t = link.t;
  const int p = t.size();
  for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
    ChecksumChannel ch;
    RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 4096, .all_gather = mode});
    for (std::size_t n : counts_for(p)) {
      auto v = pattern_buffer(n, t.rank());
      ring.allreduce_sum(v.data(), n, MessageContext{.step = 3, .bucket = 1});
      EXPECT_EQ(first_wrong(v, p), -1) << all_gather_mode_name(mode) << " count=" << n;
    }
  }
}

// Every algorithm of ours under mpirun (P = 1..4: powers of two and P = 3's fold), plain and through
// a sealing channel: exact sums for every count, bit-identical on every rank for random floats.
class MpiAlgo : public ::testing::TestWithParam<ReduceAlgo> {};

TEST_P(MpiAlgo, ExactSumsPlainAndSealed) {
  TestLink link;
  auto& t = link.t;
  const int p = t.size();
  for (const bool sealed : {false, true}) {
    for (std::size_t seg : {std::size_t{0}, std::size_t{4096}, std::size_t{1} << 20}) {
      ChecksumChannel check;
      PlainChannel plain;
      HostReduceMemory memory;
      Allreducer all(t, sealed ? static_cast<Channel&>(check) : plain, memory,
                     RingOptions{.segment_bytes = seg, .all_gather = AllGatherMode::ForwardWire});
      for (std::size_t n : counts_for(p)) {
        auto v = pattern_buffer(n, t.rank());
        all.allreduce_sum(GetParam(), v.data(), n, MessageContext{.step = 2, .bucket = 1});
        EXPECT_EQ(first_wrong(v, p), -1) << enum_name(GetParam()) << " P=" << p << " count=" << n
                                         << " seg=" << seg << (sealed ? " sealed" : " plain");
      }
    }
  }
}

TEST_P(MpiAlgo, RandomFloatsAreIdenticalOnEveryRank) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  HostReduceMemory memory;
  PlainChannel plain;
  Allreducer all(t, plain, memory, RingOptions{.segment_bytes = 8192});
  for (std::size_t n : {std::size_t{100'000}, std::size_t{777}, std::size_t{3}}) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = 0.001f * static_cast<float>((i * 2654435761U + 97U * static_cast<unsigned>(t.rank())) % 10007);
    all.allreduce_sum(GetParam(), v.data(), n, MessageContext{});
    expect_replicas_identical(coll, v);
  }
}

// On a buffer shared with the transport (Note [Shared buffers], comm/transport/shm_transport.h: over shared
// memory, peers add from it in place) every algorithm gives exactly the bits it gives on private
// memory, for every count and segment size.
TEST_P(MpiAlgo, SharedBufferGivesTheBitsOfPrivateMemory) {
  TestLink link;
  auto& t = link.t;
  const int p = t.size();
  std::string error;
  auto shared = SharedBuffer::create(((std::size_t{1} << 20) + 3) * sizeof(float), error);
  ASSERT_TRUE(shared.has_value()) << error;
  ScopedShare share(t, *shared);
  HostReduceMemory memory;
  PlainChannel plain;
  for (std::size_t seg : {std::size_t{0}, std::size_t{4096}, std::size_t{1} << 20}) {
    Allreducer all(t, plain, memory, RingOptions{.segment_bytes = seg});
    for (std::size_t n : counts_for(p)) {
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = 0.001f * static_cast<float>((i * 2654435761U + 97U * static_cast<unsigned>(t.rank())) % 10007);
      float* sh = shared->floats().data();
      std::copy(v.begin(), v.end(), sh);
      all.allreduce_sum(GetParam(), v.data(), n, MessageContext{});
      all.allreduce_sum(GetParam(), sh, n, MessageContext{.step = 1});
      EXPECT_TRUE(std::equal(v.begin(), v.end(), sh,
                             [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }))
          << enum_name(GetParam()) << " P=" << p << " count=" << n << " seg=" << seg;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, MpiAlgo, ::testing::ValuesIn(kReduceAlgos),
                         [](const auto& param_info) { return std::string(enum_name(param_info.param)); });

TEST(MpiCollectives, BroadcastFromEveryRoot) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  coll.set_segment_bytes(64 << 10);
  for (int root = 0; root < t.size(); ++root) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, (std::size_t{3} << 20) + 5}) {
      std::vector<std::byte> buf(n, std::byte{0});
      if (t.rank() == root) {
        for (std::size_t i = 0; i < n; ++i)
          buf[i] = static_cast<std::byte>((i * 31 + static_cast<std::size_t>(root)) & 0xFF);
      }
      coll.broadcast(buf, root, static_cast<std::uint64_t>(root));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i)
        bad += buf[i] != static_cast<std::byte>((i * 31 + static_cast<std::size_t>(root)) & 0xFF);
      EXPECT_EQ(bad, 0U) << "root " << root << " n " << n;
    }
  }
}

TEST(MpiCollectives, SealedBroadcastAndAllgather) {
  TestLink link;
  auto& t = link.t;
  ChecksumChannel ch;
  Collectives coll(t, ch);
  coll.set_segment_bytes(1000);
  std::vector<float> params(5000, 0.0f);
  if (t.rank() == 0) params = pattern_buffer(5000, 0);
  coll.broadcast(std::span(params), 0);
  EXPECT_EQ(params, pattern_buffer(5000, 0));
  const std::uint64_t digest = 0xABCD0000ULL + static_cast<std::uint64_t>(t.rank() == 1 ? 1 : 0);
  const auto all = coll.allgather(std::as_bytes(std::span(&digest, 1)), 7);
  EXPECT_EQ(first_mismatch(all, sizeof digest), t.size() > 1 ? 1 : -1);
  coll.barrier(9);
}

TEST(MpiCollectives, BarrierWaitsForTheLastRank) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  coll.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  if (t.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  coll.barrier(1);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(150));  // everybody waited for rank 0
}

TEST(MpiCollectives, AllgatherInRankOrder) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  std::array<std::byte, 32> mine{};
  mine.fill(static_cast<std::byte>(t.rank() + 1));
  const auto all = coll.allgather(mine);
  ASSERT_EQ(all.size(), 32U * static_cast<std::size_t>(t.size()));
  for (int r = 0; r < t.size(); ++r)
    EXPECT_EQ(all[32U * static_cast<std::size_t>(r) + 5], static_cast<std::byte>(r + 1));
  EXPECT_EQ(first_mismatch(all, 32), t.size() > 1 ? 1 : -1);
}

TEST(MpiTransportTest, SilentPeerTimesOutNamingIt) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  if (t.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  if (t.rank() == 0) {
    std::array<std::byte, 64> buf{};
    Request r = t.irecv(1, buf, tags::kUser);  // rank 1 never sends
    const auto t0 = std::chrono::steady_clock::now();
    try {
      t.wait(r, std::chrono::milliseconds(300));
      ADD_FAILURE() << "wait returned without a message";
    } catch (const RunError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("from rank 1"), std::string::npos) << what;
      EXPECT_NE(what.find("receive"), std::string::npos) << what;
      EXPECT_NE(what.find("0.3 s"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }  // the abandoned receive is cancelled here
  coll.barrier();
}

TEST(MpiTransportTest, ShortMessageIsVisibleAndLongOneIsAnError) {
  TestLink link;
  auto& t = link.t;
  Collectives coll(t);
  if (t.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  std::array<std::byte, 200> buf{};
  if (t.rank() == 1) {
    Request a = t.isend(0, std::span(buf).first(10), tags::kUser + 1);
    Request b = t.isend(0, std::span(buf).first(200), tags::kUser + 2);
    t.wait(a);
    t.wait(b);
  } else if (t.rank() == 0) {
    Request a = t.irecv(1, std::span(buf).first(100), tags::kUser + 1);
    EXPECT_EQ(t.wait(a), 10U);
    Request b = t.irecv(1, std::span(buf).first(100), tags::kUser + 2);
    EXPECT_THROW(t.wait(b), RunError);
  }
  coll.barrier();
}

TEST(MpiBaseline, MpiAllreduceSums) {
  TestLink link;
  auto& t = link.t;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
    auto v = pattern_buffer(n, t.rank());
    mpi_allreduce_sum(link.mpi.comm(), v.data(), n);
    EXPECT_EQ(first_wrong(v, t.size()), -1);
  }
}

}  // namespace
}  // namespace tt::comm
