// The hierarchical all-reduce (comm/allreduce/hier_allreduce.h) over the in-process transport: the
// exact sum on every rank for nodes of 2 and 3 and unequal, empty and odd chunk sizes, plain and
// through a checksumming channel; its documented summation order bit for bit; the ring's bits on one
// node and on nodes of one rank; its hops' peers and phases; a partial node refused.
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/allreduce/allreduce_cost.h"
#include "comm/allreduce/hier_allreduce.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using testing::ChecksumChannel;
using testing::first_wrong;
using testing::pattern_buffer;

struct HierCase {
  int ranks;
  int node_ranks;
  std::size_t segment_bytes;
  bool sealed;
};

std::string describe(const HierCase& c) {
  return "P=" + std::to_string(c.ranks) + " G=" + std::to_string(c.node_ranks) +
         " seg=" + std::to_string(c.segment_bytes) + (c.sealed ? " sealed" : " plain");
}

// Runs `algo` on every rank over `inputs` (one buffer per rank) and returns each rank's result.
std::vector<std::vector<float>> run_all(ReduceAlgo algo, const HierCase& c,
                                        const std::vector<std::vector<float>>& inputs) {
  InprocWorld world(c.ranks);
  std::mutex mu;
  std::vector<std::vector<float>> out(inputs.size());
  const auto errors = world.run([&](Transport& t) {
    ChecksumChannel sealed;
    PlainChannel plain;
    HostReduceMemory memory;
    Channel& ch = c.sealed ? static_cast<Channel&>(sealed) : plain;
    Allreducer all(t, ch, memory,
                   RingOptions{.segment_bytes = c.segment_bytes,
                               .timeout = std::chrono::milliseconds{0},
                               .all_gather = AllGatherMode::PerHop,
                               .tag = tags::kRing,
                               .node_ranks = c.node_ranks});
    auto v = inputs[static_cast<std::size_t>(t.rank())];
    all.allreduce_sum(algo, v.data(), v.size(), MessageContext{.step = 7});
    std::lock_guard lock(mu);
    out[static_cast<std::size_t>(t.rank())] = std::move(v);
  });
  for (const auto& e : errors) EXPECT_FALSE(e) << describe(c);
  return out;
}

std::vector<std::vector<float>> patterns(int ranks, std::size_t n) {
  std::vector<std::vector<float>> in;
  for (int r = 0; r < ranks; ++r) in.push_back(pattern_buffer(n, r));
  return in;
}

// Values whose sum depends on the order of the adds (no two orders agree on every element).
std::vector<std::vector<float>> awkward(int ranks, std::size_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<std::vector<float>> in(static_cast<std::size_t>(ranks), std::vector<float>(n));
  for (auto& v : in)
    for (float& x : v) x = d(rng) * (rng() % 2 == 0 ? 1e-3f : 1e3f);
  return in;
}

// Whom a rank's gradient messages go to (the adversary's banner names them): hier's node successor
// and local-index successor, the ring's successor alone, recursive doubling's partners.
TEST(HierAllreduce, SendPeersAreTheHopsReceivers) {
  EXPECT_EQ(send_peers(ReduceAlgo::Hier, 0, 4, 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(send_peers(ReduceAlgo::Hier, 3, 6, 3), (std::vector<int>{4, 0}));
  EXPECT_EQ(send_peers(ReduceAlgo::Hier, 0, 4, 0), (std::vector<int>{1}));  // one node: its ring
  EXPECT_EQ(send_peers(ReduceAlgo::Ring, 3, 4), (std::vector<int>{0}));
  EXPECT_EQ(send_peers(ReduceAlgo::Rd, 1, 4), (std::vector<int>{0, 3}));
}

TEST(HierAllreduce, ExactSumForNodesOfTwoAndThree) {
  for (const HierCase& c :
       {HierCase{4, 2, 0, false}, HierCase{4, 2, 0, true}, HierCase{4, 2, 40, true}, HierCase{6, 3, 0, false},
        HierCase{6, 3, 0, true}, HierCase{6, 3, 40, false}, HierCase{6, 2, 0, true}}) {
    // Empty, fewer than G, uneven node chunks and uneven inter blocks within them.
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1001}, std::size_t{4099}}) {
      const auto out = run_all(ReduceAlgo::Hier, c, patterns(c.ranks, n));
      for (int r = 0; r < c.ranks; ++r)
        EXPECT_EQ(first_wrong(out[static_cast<std::size_t>(r)], c.ranks), -1)
            << describe(c) << " n=" << n << " rank " << r;
      for (const auto& v : out) EXPECT_EQ(v, out[0]) << describe(c) << " n=" << n;
    }
  }
}

// hier_allreduce.h's order: element i of node chunk c (balanced over G), inter block j (balanced over
// N within the chunk) = the node sums, in ring order from node j, of each node's ring-order sum from
// local index c.
std::vector<float> documented_order(const std::vector<std::vector<float>>& in, int g) {
  const int p = static_cast<int>(in.size());
  const int nodes = p / g;
  const std::size_t n = in[0].size();
  std::vector<float> out(n);
  for (int c = 0; c < g; ++c) {
    const ElemRange chunk = balanced_block(n, static_cast<std::size_t>(g), static_cast<std::size_t>(c));
    for (int j = 0; j < nodes; ++j) {
      const ElemRange b =
          balanced_block(chunk.count, static_cast<std::size_t>(nodes), static_cast<std::size_t>(j));
      for (std::size_t i = chunk.offset + b.offset; i < chunk.offset + b.offset + b.count; ++i) {
        float total = 0;
        for (int k = 0; k < nodes; ++k) {
          const int node = (j + k) % nodes;
          float s = 0;
          for (int m = 0; m < g; ++m) s += in[static_cast<std::size_t>(node * g + (c + m) % g)][i];
          total = k == 0 ? s : total + s;
        }
        out[i] = total;
      }
    }
  }
  return out;
}

TEST(HierAllreduce, SumsInTheDocumentedOrder) {
  for (const HierCase& c : {HierCase{4, 2, 0, true}, HierCase{6, 3, 0, false}, HierCase{6, 2, 40, true}}) {
    const auto in = awkward(c.ranks, 1003);
    const auto out = run_all(ReduceAlgo::Hier, c, in);
    const std::vector<float> want = documented_order(in, c.node_ranks);
    for (int r = 0; r < c.ranks; ++r)
      EXPECT_EQ(out[static_cast<std::size_t>(r)], want) << describe(c) << " rank " << r;
    // Run twice: the same bits.
    EXPECT_EQ(run_all(ReduceAlgo::Hier, c, in), out) << describe(c);
  }
}

TEST(HierAllreduce, OneNodeAndNodesOfOneAreTheRing) {
  const auto in = awkward(4, 1003);
  const auto ring = run_all(ReduceAlgo::Ring, {4, 0, 0, true}, in);
  EXPECT_EQ(run_all(ReduceAlgo::Hier, {4, 4, 0, true}, in), ring);
  EXPECT_EQ(run_all(ReduceAlgo::Hier, {4, 1, 0, true}, in), ring);
  EXPECT_EQ(run_all(ReduceAlgo::Hier, {4, 0, 0, true}, in), ring);
  // Two nodes of two add in another order: other bits somewhere (the test data makes sure).
  EXPECT_NE(run_all(ReduceAlgo::Hier, {4, 2, 0, true}, in), ring);
}

// Rank 5 of P = 6 in nodes of 3 (node 1, local 2): two local scatter-reduce hops, one inter-node hop
// each way with rank 2 (local index 2 of node 0), two local all-gather hops; the local ring's wrap from
// local 2 to local 0 is rank 3.
TEST(HierAllreduce, HopsStayInTheirNodeOrLocalIndex) {
  const std::vector<Hop> hops = hier_hops(5, 6, 3, 60);
  ASSERT_EQ(hops.size(), 6U);
  EXPECT_EQ(hops[0].phase, MessagePhase::HierLocalScatterReduce);
  EXPECT_EQ(hops[0].send.peer, 3);
  EXPECT_EQ(hops[0].recv.peer, 4);
  EXPECT_EQ(hops[2].phase, MessagePhase::HierInterScatterReduce);
  EXPECT_EQ(hops[2].send.peer, 2);
  EXPECT_EQ(hops[2].recv.peer, 2);
  EXPECT_EQ(hops[2].send.range.count, 10U);  // a third of the buffer, half of it
  EXPECT_EQ(hops[3].phase, MessagePhase::HierInterAllGather);
  EXPECT_EQ(hops[5].phase, MessagePhase::HierLocalAllGather);
  for (const Hop& h : hops)
    EXPECT_TRUE(h.reduce == (h.phase == MessagePhase::HierLocalScatterReduce ||
                             h.phase == MessagePhase::HierInterScatterReduce));
}

TEST(HierAllreduce, RefusesAPartialNode) {
  EXPECT_THROW(hier_hops(0, 6, 4, 100), InputError);
  InprocWorld world(3);
  const auto errors = world.run([](Transport& t) {
    PlainChannel plain;
    HostReduceMemory memory;
    EXPECT_THROW(HierAllreduce(t, plain, memory,
                               RingOptions{.segment_bytes = 0,
                                           .timeout = std::chrono::milliseconds{0},
                                           .all_gather = AllGatherMode::PerHop,
                                           .tag = tags::kRing,
                                           .node_ranks = 2}),
                 InputError);
  });
  for (const auto& e : errors) EXPECT_FALSE(e);
}

}  // namespace
}  // namespace tt::comm
