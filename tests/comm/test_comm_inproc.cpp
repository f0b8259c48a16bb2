// comm/ over the in-process transport (ranks as threads): transport semantics, ring all-reduce for
// P = 1..4 with plain and non-pass-through channels, collectives, and every fault kind of FaultPlan.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/allreduce/recursive_allreduce.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/allreduce/shard_handover.h"
#include "comm/collectives.h"
#include "core/profiler.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using namespace std::chrono_literals;
using testing::ChecksumChannel;
using testing::first_wrong;
using testing::pattern_buffer;

std::string message_of(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r)
    EXPECT_FALSE(errors[r]) << "rank " << r << ": " << message_of(errors[r]);
}

// ---------------------------------------------------------------------------------------------
// Transport semantics

TEST(Inproc, MatchesInOrderAndReportsLengths) {
  InprocWorld world(2);
  expect_no_errors(world.run([](Transport& t) {
    std::array<std::byte, 16> a{}, b{}, c{};
    if (t.rank() == 0) {
      a.fill(std::byte{1});
      b.fill(std::byte{2});
      Request s1 = t.isend(1, std::span(a).first(16), 5);
      Request s2 = t.isend(1, std::span(b).first(4), 5);
      Request s3 = t.isend(1, std::span(a).first(16), 6);
      t.wait(s1);
      t.wait(s2);
      t.wait(s3);
    } else {
      Request r1 = t.irecv(0, a, 5);
      Request r2 = t.irecv(0, b, 5);
      EXPECT_EQ(t.wait(r2), 4U);  // waiting out of order still matches in post order
      EXPECT_EQ(t.wait(r1), 16U);
      EXPECT_EQ(a[0], std::byte{1});
      EXPECT_EQ(b[0], std::byte{2});
      Request r3 = t.irecv(0, std::span(c).first(8), 6);  // 16 bytes into 8: error, as MPI_ERR_TRUNCATE
      EXPECT_THROW(t.wait(r3), RunError);
    }
  }));
}

TEST(Inproc, CancelledReceiveLeavesTheMessageForTheNextOne) {
  InprocWorld world(2);
  expect_no_errors(world.run([](Transport& t) {
    std::array<std::byte, 8> buf{};
    if (t.rank() == 1) {
      { Request abandoned = t.irecv(0, buf, 1); }
      Collectives(t).barrier();
      Request r = t.irecv(0, buf, 1);
      EXPECT_EQ(t.wait(r), 8U);
    } else {
      Collectives(t).barrier();
      Request s = t.isend(1, buf, 1);
      t.wait(s);
    }
  }));
}

TEST(Inproc, SilentPeerTimesOutNamingIt) {
  InprocWorld world(2, {}, 200ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto errors = world.run([](Transport& t) {
    if (t.rank() != 0) return;
    std::array<std::byte, 8> buf{};
    Request r = t.irecv(1, buf, 3);
    t.wait(r);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  const std::string what = message_of(errors[0]);
  EXPECT_NE(what.find("rank 0: receive from rank 1"), std::string::npos) << what;
  EXPECT_NE(what.find("0.2 s"), std::string::npos) << what;
}

// ---------------------------------------------------------------------------------------------
// Ring all-reduce

struct RingCase {
  int ranks;
  std::size_t segment_bytes;
  bool sealed;
  AllGatherMode mode;
  ReduceAlgo algo = ReduceAlgo::Ring;
};

std::string describe(const RingCase& c) {
  return std::string(enum_name(c.algo)) + " P=" + std::to_string(c.ranks) +
         " seg=" + std::to_string(c.segment_bytes) + (c.sealed ? " sealed " : " plain ") +
         all_gather_mode_name(c.mode);
}

// Every count (0, below P, around P, odd sizes) gives the exact sum on every rank, bit-identical across
// ranks. 3-float segments of the largest buffer mean ~10^5 messages per call: only where the ring
// always ran them (P <= 4).
void run_ring_case(const RingCase& c) {
  InprocWorld world(c.ranks);
  const auto P = static_cast<std::size_t>(c.ranks);
  std::vector<std::size_t> counts = {0, 1, P - 1, P, P + 1, 1000, 65'539};
  if (c.segment_bytes == 12 && (c.ranks > 4 || c.algo != ReduceAlgo::Ring)) counts.back() = 4099;
  std::mutex mu;
  std::vector<std::vector<float>> results(P);
  expect_no_errors(world.run([&](Transport& t) {
    ChecksumChannel sealed;
    PlainChannel plain;
    HostReduceMemory memory;
    Channel& ch = c.sealed ? static_cast<Channel&>(sealed) : plain;
    Allreducer all(t, ch, memory, RingOptions{.segment_bytes = c.segment_bytes, .all_gather = c.mode});
    for (std::size_t n : counts) {
      auto v = pattern_buffer(n, t.rank());
      all.allreduce_sum(c.algo, v.data(), n, MessageContext{.step = n});
      EXPECT_EQ(first_wrong(v, c.ranks), -1) << describe(c) << " rank " << t.rank() << " count " << n;
      if (n == counts.back()) {
        std::lock_guard lock(mu);
        results[static_cast<std::size_t>(t.rank())] = v;
      }
    }
  }));
  for (std::size_t r = 1; r < P; ++r) EXPECT_EQ(results[r], results[0]) << describe(c);
}

// Every algorithm, P = 1..8 (powers of two and not: folds), plain and through a sealing channel.
// P = 5..8 (more threads than these machines have cores, each waiting its turn) take one segment
// size and the two channels: every fold and step shape is there, at a third of the wall time.
class InprocAlgo : public ::testing::TestWithParam<ReduceAlgo> {};

TEST_P(InprocAlgo, PlainAndSealedOverOneToEightRanks) {
  for (int p = 1; p <= 8; ++p) {
    for (std::size_t seg : {std::size_t{0}, std::size_t{12}, std::size_t{4096}}) {
      if (p > 4 && seg != 12) continue;
      run_ring_case({p, seg, false, AllGatherMode::PerHop, GetParam()});
      run_ring_case({p, seg, true, AllGatherMode::PerHop, GetParam()});
      if (p <= 4) run_ring_case({p, seg, true, AllGatherMode::ForwardWire, GetParam()});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, InprocAlgo, ::testing::ValuesIn(kReduceAlgos),
                         [](const auto& param_info) { return std::string(enum_name(param_info.param)); });

TEST(InprocRing, BatchedChannelGetsWindowsOfSegments) {
  for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
    InprocWorld world(3);
    expect_no_errors(world.run([&](Transport& t) {
      ChecksumChannel ch;
      ch.batch = 4;
      RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 40, .all_gather = mode});
      for (std::size_t n : {std::size_t{1000}, std::size_t{31}, std::size_t{2}}) {
        auto v = pattern_buffer(n, t.rank());
        ring.allreduce_sum(v.data(), n, MessageContext{});
        EXPECT_EQ(first_wrong(v, 3), -1) << n;
      }
    }));
  }
}

// The all-reduce split in two (sharded data parallelism): after the reduce-scatter this rank's owned
// chunk holds the exact sum; the all-gather of that chunk then gives the all-reduce's bits, plain and
// sealed, per hop and forward-wire, for counts with unequal and empty chunks.
TEST(InprocRing, ReduceScatterThenAllGatherIsTheAllreduce) {
  for (int p = 1; p <= 4; ++p) {
    for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
      InprocWorld world(p);
      expect_no_errors(world.run([&](Transport& t) {
        ChecksumChannel ch;
        RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 40, .all_gather = mode});
        for (std::size_t n : {std::size_t{2}, std::size_t{31}, std::size_t{1001}}) {
          auto whole = pattern_buffer(n, t.rank());
          ring.allreduce_sum(whole.data(), n, MessageContext{.step = 1});
          auto split = pattern_buffer(n, t.rank());
          ring.reduce_scatter_sum(split.data(), n, MessageContext{.step = 2}, 40);
          const ElemRange own = RingGeometry::owned_chunk(t.rank(), p, n);
          for (std::size_t i = own.offset; i < own.offset + own.count; ++i)
            ASSERT_EQ(split[i], whole[i]) << "P=" << p << " n=" << n << " element " << i;
          // Only the owned chunk is the sum: the all-gather must overwrite the rest.
          for (std::size_t i = 0; i < n && p > 1; ++i)
            if (i < own.offset || i >= own.offset + own.count) split[i] = -1.0f;
          ring.all_gather(split.data(), n, MessageContext{.step = 3}, 40);
          EXPECT_EQ(split, whole) << "P=" << p << " n=" << n << " " << all_gather_mode_name(mode);
        }
      }));
    }
  }
}

// Note [Folded ring] (comm/allreduce/ring_geometry.h): a ring of P modelled by K ranks. Every message's
// two ends agree on its range, block and origin (what sealing binds and the receive's length), each rank
// runs P - 1 hops per phase, rank r sends what modelled rank r sends in the full ring, and unfolded
// (P == K) the geometry is the full ring's, the predecessor's chunk (r - 1 - s) and all-gather's (r - s).
TEST(RingGeometryFold, BothEndsOfEveryMessageAgree) {
  for (int k : {2, 3, 4}) {
    for (int mult : {1, 2, 5}) {
      const int p = k * mult;
      for (std::size_t n : {std::size_t{7}, std::size_t{1001}, std::size_t{4096}}) {
        std::vector<RingGeometry> geo;
        for (int r = 0; r < k; ++r) geo.emplace_back(r, k, n, 0, false, 0, p);
        const RingGeometry full_ring(0, p, n, 0, false, 0);
        for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(p); ++s) {
          for (int r = 0; r < k; ++r) {
            for (const bool gather : {false, true}) {
              const Hop mine = gather ? geo[r].all_gather_hop(s) : geo[r].scatter_reduce_hop(s);
              const int next = (r + 1) % k;
              const Hop theirs = gather ? geo[next].all_gather_hop(s) : geo[next].scatter_reduce_hop(s);
              const std::string at = "K=" + std::to_string(k) + " P=" + std::to_string(p) +
                                     " n=" + std::to_string(n) + " hop " + std::to_string(s) + " rank " +
                                     std::to_string(r) + (gather ? " all-gather" : " scatter-reduce");
              EXPECT_EQ(mine.send.peer, next) << at;
              EXPECT_EQ(theirs.recv.peer, r) << at;
              EXPECT_EQ(theirs.recv.block, mine.send.block) << at;
              EXPECT_EQ(theirs.recv.origin, mine.send.origin) << at;
              EXPECT_EQ(theirs.recv.range.offset, mine.send.range.offset) << at;
              EXPECT_EQ(theirs.recv.range.count, mine.send.range.count) << at;
              // What rank r sends is what modelled rank r sends in the ring of P.
              const RingGeometry modelled(r, p, n, 0, false, 0);
              const Hop same = gather ? modelled.all_gather_hop(s) : modelled.scatter_reduce_hop(s);
              EXPECT_EQ(mine.send.block, same.send.block) << at;
              EXPECT_EQ(mine.send.origin, same.send.origin) << at;
              if (mult == 1) {
                const auto pu = static_cast<std::uint32_t>(p), ru = static_cast<std::uint32_t>(r);
                EXPECT_EQ(mine.recv.block, gather ? (ru + pu - s) % pu : (ru + 2 * pu - s - 1) % pu) << at;
                EXPECT_EQ(mine.fuse, !gather && s + 2 == pu) << at;
              }
              // A fused hop sends next what it reduced: only where that is the next hop's chunk.
              if (mine.fuse) {
                EXPECT_EQ(mine.recv.block, geo[r].all_gather_hop(0).send.block) << at;
              }
            }
          }
        }
        EXPECT_EQ(geo[0].max_chunk(), full_ring.max_chunk());
        EXPECT_EQ(geo[1 % k].owned().offset, RingGeometry::owned_chunk(1 % k, p, n).offset);
      }
    }
  }
  // A fold needs two ranks dividing the modelled ring, and per-hop all-gathers.
  EXPECT_THROW(RingGeometry(0, 4, 100, 0, false, 0, 10), InputError);
  EXPECT_THROW(RingGeometry(0, 1, 100, 0, false, 0, 8), InputError);
  EXPECT_THROW(RingGeometry(0, 4, 100, 0, true, 28, 8), InputError);
}

// A folded ring runs through a context-checking channel (every message opened under the context its
// receiver expects) with the modelled ring's message count: 2 (P - 1) per rank and call.
TEST(InprocRing, FoldedRingRunsSealedWithTheModelledMessages) {
  const int k = 4, p = 12;
  InprocWorld world(k);
  expect_no_errors(world.run([&](Transport& t) {
    ChecksumChannel ch;
    RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 0, .model_ranks = p});
    for (std::size_t n : {std::size_t{31}, std::size_t{1001}, std::size_t{12 * 64}}) {
      auto v = pattern_buffer(n, t.rank());
      const int before = ch.seals.load();
      ring.allreduce_sum(v.data(), n, MessageContext{.step = n});
      EXPECT_EQ(ch.seals.load() - before, 2 * (p - 1)) << n;
    }
    EXPECT_EQ(ch.opens.load(), ch.seals.load());
  }));
}

// Values whose sums depend on the order of the adds, different on every rank.
std::vector<float> awkward_buffer(std::size_t n, int rank) {
  std::mt19937 rng(static_cast<unsigned>(rank) * 7919u + static_cast<unsigned>(n));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng) * (rng() % 2 == 0 ? 1e-3f : 1e3f);
  return v;
}

// Note [Shard handover] (comm/allreduce/shard_handover.h): every algorithm's reduce-scatter leaves rank r
// the sum of its ring chunk with that algorithm's all-reduce bits, and any algorithm's all-gather of the
// ring chunks rebuilds the buffer; at P = 2, 3 (unequal shards, an extra rank) and 4 (hier on two nodes
// of two), plain and sealed, whole ranges and segments, for counts with empty chunks.
TEST(InprocAlgo, HalvesKeepTheRingShardLayoutAndTheAlgorithmsBits) {
  for (int p = 2; p <= 4; ++p) {
    for (const bool sealed : {false, true}) {
      InprocWorld world(p);
      expect_no_errors(world.run([&](Transport& t) {
        ChecksumChannel check;
        PlainChannel plain;
        HostReduceMemory memory;
        Allreducer all(t, sealed ? static_cast<Channel&>(check) : plain, memory,
                       RingOptions{.segment_bytes = 40,
                                   .timeout = std::chrono::milliseconds{0},
                                   .all_gather = AllGatherMode::PerHop,
                                   .tag = tags::kRing,
                                   .node_ranks = p == 4 ? 2 : 0});
        std::uint64_t step = 0;
        for (std::size_t a = 0; a < kReduceAlgos.size(); ++a) {
          const ReduceAlgo algo = kReduceAlgos[a];
          const ReduceAlgo gather_algo = kReduceAlgos[(a + 1) % kReduceAlgos.size()];
          for (std::size_t n : {std::size_t{2}, std::size_t{31}, std::size_t{1001}}) {
            for (std::size_t seg : {std::size_t{0}, std::size_t{40}}) {
              const std::string what = std::string(enum_name(algo)) + " P=" + std::to_string(p) +
                                       " n=" + std::to_string(n) + " seg=" + std::to_string(seg) +
                                       (sealed ? " sealed" : " plain");
              auto whole = awkward_buffer(n, t.rank());
              all.allreduce_sum(algo, whole.data(), n, MessageContext{.step = ++step}, seg);
              auto split = awkward_buffer(n, t.rank());
              all.reduce_scatter_sum(algo, split.data(), n, MessageContext{.step = ++step}, seg);
              const ElemRange own = RingGeometry::owned_chunk(t.rank(), p, n);
              for (std::size_t i = own.offset; i < own.offset + own.count; ++i)
                ASSERT_EQ(split[i], whole[i]) << what << " rank " << t.rank() << " element " << i;
              for (std::size_t i = 0; i < n; ++i)
                if (i < own.offset || i >= own.offset + own.count) split[i] = -1.0f;
              all.all_gather(gather_algo, split.data(), n, MessageContext{.step = ++step}, seg);
              ASSERT_EQ(split, whole) << what << ", gathered by " << enum_name(gather_algo);
            }
          }
        }
      }));
    }
  }
}

// Note [Shard handover]: rhd's moves paired into rounds. Both ends of every move agree on its round
// and part, a rank sends and receives at most once a round, every element of a ring chunk held
// elsewhere arrives, and at P = 2^k (rhd's blocks a permutation of the ring's chunks) the handover and
// the handback take one round each.
TEST(ShardHandover, PairsTheMovesIntoRounds) {
  const std::size_t n = 1001;
  for (int p = 2; p <= 12; ++p) {
    const auto natural = [p, n](int q) { return halving_owned(q, p, n); };
    for (const bool to_ring : {true, false}) {
      using Key = std::tuple<int, int, std::uint32_t>;                    // sender, receiver, round
      std::map<Key, std::pair<std::size_t, std::size_t>> sent, received;  // -> (offset, count)
      std::size_t most_rounds = 0;
      for (int r = 0; r < p; ++r) {
        std::vector<Hop> hops;
        handover_hops(r, p, n, natural, to_ring, hops);
        most_rounds = std::max(most_rounds, hops.size());
        std::size_t arrived = 0;
        for (std::size_t i = 0; i < hops.size(); ++i) {
          const Hop& h = hops[i];
          if (i > 0) {
            EXPECT_GT(h.index, hops[i - 1].index) << "P=" << p << " rank " << r;
          }
          if (h.send.active()) sent[{r, h.send.peer, h.index}] = {h.send.range.offset, h.send.range.count};
          if (h.recv.active())
            received[{h.recv.peer, r, h.index}] = {h.recv.range.offset, h.recv.range.count};
          if (h.recv.active()) arrived += h.recv.range.count;
        }
        // What this rank lacks before its next step: its ring chunk (over) or its natural range (back).
        const ElemRange ring = RingGeometry::owned_chunk(r, p, n), mine = natural(r);
        const std::size_t lo = std::max(ring.offset, mine.offset);
        const std::size_t hi = std::min(ring.offset + ring.count, mine.offset + mine.count);
        const std::size_t kept = hi > lo ? hi - lo : 0;
        EXPECT_EQ(arrived, (to_ring ? ring.count : mine.count) - kept) << "P=" << p << " rank " << r;
      }
      EXPECT_EQ(sent, received) << "P=" << p << (to_ring ? " handover" : " handback");
      if ((p & (p - 1)) == 0) {
        EXPECT_LE(most_rounds, 1u) << "P=" << p << (to_ring ? " handover" : " handback");
      }
    }
  }
}

// docs/design.md §5: per rank and bucket, per-hop seals 2(P-1) messages, forward-wire seals P; both open
// 2(P-1).
TEST(InprocRing, SealCountsMatchTheDesign) {
  for (int p = 2; p <= 4; ++p) {
    for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
      InprocWorld world(p);
      expect_no_errors(world.run([&](Transport& t) {
        ChecksumChannel ch;
        Profiler prof;
        RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 0, .all_gather = mode}, &prof);
        auto v = pattern_buffer(1000, t.rank());
        ring.allreduce_sum(v.data(), v.size(), MessageContext{});
        EXPECT_EQ(ch.seals.load(), mode == AllGatherMode::PerHop ? 2 * (p - 1) : p);
        EXPECT_EQ(ch.opens.load(), 2 * (p - 1));
        EXPECT_EQ(prof.count(Counter::MessagesSent), 2 * (p - 1));
        EXPECT_EQ(prof.count(Counter::MessagesReceived), 2 * (p - 1));
      }));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Faults. P = 3, 3000 floats: chunks of 1000, segments of 500 floats, so messages on a link have equal
// sizes and replay/reorder keep lengths. The rules hit the first messages on link 0 -> 1 (scatter-reduce).

struct FaultOutcome {
  std::vector<std::string> errors;  // per rank, "" when it finished
  std::vector<bool> correct;        // per rank: the exact sum
  std::vector<FaultKind> fired;
};

FaultOutcome run_with_fault(const FaultRule& rule, bool sealed, std::chrono::milliseconds timeout = 300ms) {
  InprocWorld world(3, FaultPlan{}.add(rule), timeout);
  FaultOutcome out;
  out.correct.assign(3, false);
  std::mutex mu;
  auto errors = world.run([&](Transport& t) {
    ChecksumChannel check;
    PlainChannel plain;
    Channel& ch = sealed ? static_cast<Channel&>(check) : plain;
    RingAllreduce ring(t, ch, RingOptions{.segment_bytes = 2000});
    auto v = pattern_buffer(3000, t.rank());
    ring.allreduce_sum(v.data(), v.size(), MessageContext{.step = 1});
    std::lock_guard lock(mu);
    out.correct[static_cast<std::size_t>(t.rank())] = first_wrong(v, 3) == -1;
  });
  for (const auto& e : errors) out.errors.push_back(message_of(e));
  out.fired = world.faults_fired();
  return out;
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& e) { return e.find(s) != std::string::npos; });
}
bool any_wrong_without_error(const FaultOutcome& o) {
  for (std::size_t r = 0; r < o.correct.size(); ++r) {
    if (o.errors[r].empty() && !o.correct[r]) return true;
  }
  return false;
}

FaultRule on_link01(FaultKind kind, std::size_t index = 0) {
  FaultRule r;
  r.kind = kind;
  r.src = 0;
  r.dst = 1;
  r.index = index;
  return r;
}

TEST(InprocFaults, NoFaultBaseline) {
  const auto o = run_with_fault(FaultRule{.kind = FaultKind::Drop, .src = 7}, false);  // never matches
  EXPECT_TRUE(o.fired.empty());
  EXPECT_EQ(o.correct, std::vector<bool>(3, true));
}

TEST(InprocFaults, DropTimesOutNamingThePeer) {
  // Plaintext on one tag: later messages slide into the gap, so the data is silently wrong until the
  // last receive starves and times out, naming the peer.
  const auto plain = run_with_fault(on_link01(FaultKind::Drop), false);
  ASSERT_EQ(plain.fired.size(), 1U);
  EXPECT_NE(plain.errors[1].find("receive from rank 0"), std::string::npos) << plain.errors[1];
  EXPECT_NE(plain.errors[1].find("did not complete within 0.3 s"), std::string::npos) << plain.errors[1];
  // Sealed: the next segment arrives in the dropped one's place and fails to open right there.
  const auto sealed = run_with_fault(on_link01(FaultKind::Drop), true);
  EXPECT_NE(sealed.errors[1].find("phase scatter_reduce, hop 0, chunk 0, segment 0"), std::string::npos)
      << sealed.errors[1];
}

TEST(InprocFaults, FlippedBitCorruptsPlainResultAndFailsToOpenSealed) {
  auto rule = on_link01(FaultKind::FlipBit);
  rule.bit = 30;  // an exponent bit of the first float
  const auto plain = run_with_fault(rule, false);
  ASSERT_EQ(plain.fired.size(), 1U);
  EXPECT_TRUE(any_wrong_without_error(plain));  // plaintext: silently wrong — why TEE mode seals
  const auto sealed = run_with_fault(rule, true);
  EXPECT_NE(sealed.errors[1].find("checksum open failed"), std::string::npos) << sealed.errors[1];
}

TEST(InprocFaults, TruncationIsAShortMessageError) {
  auto rule = on_link01(FaultKind::Truncate);
  rule.keep_bytes = 100;
  for (bool sealed : {false, true}) {
    const auto o = run_with_fault(rule, sealed);
    ASSERT_EQ(o.fired.size(), 1U);
    EXPECT_NE(o.errors[1].find("short message from rank 0 (100 of"), std::string::npos) << o.errors[1];
  }
}

TEST(InprocFaults, ReplayIsWrongInPlainAndCaughtWhenSealed) {
  const auto rule = on_link01(FaultKind::Replay, 1);  // segment 1 replaced by segment 0
  const auto plain = run_with_fault(rule, false);
  ASSERT_EQ(plain.fired.size(), 1U);
  EXPECT_TRUE(any_wrong_without_error(plain));
  const auto sealed = run_with_fault(rule, true);
  EXPECT_NE(sealed.errors[1].find("checksum open failed"), std::string::npos) << sealed.errors[1];
}

TEST(InprocFaults, ReorderIsWrongInPlainAndCaughtWhenSealed) {
  const auto rule = on_link01(FaultKind::Reorder, 0);  // segments 0 and 1 swap places
  const auto plain = run_with_fault(rule, false);
  ASSERT_EQ(plain.fired.size(), 1U);
  EXPECT_TRUE(any_wrong_without_error(plain));
  const auto sealed = run_with_fault(rule, true);
  EXPECT_NE(sealed.errors[1].find("checksum open failed at step 1, bucket 0, phase scatter_reduce"),
            std::string::npos)
      << sealed.errors[1];
}

TEST(InprocFaults, DelayWithinTimeoutIsHarmlessBeyondItFatal) {
  auto rule = on_link01(FaultKind::Delay);
  rule.delay = 100ms;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ok = run_with_fault(rule, true, 2000ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
  EXPECT_EQ(ok.fired.size(), 1U);
  EXPECT_EQ(ok.correct, std::vector<bool>(3, true));
  rule.delay = 1000ms;
  const auto late = run_with_fault(rule, false, 200ms);
  EXPECT_NE(late.errors[1].find("did not complete within 0.2 s"), std::string::npos) << late.errors[1];
}

// ---------------------------------------------------------------------------------------------
// Collectives

TEST(InprocCollectives, BroadcastBarrierAllgatherPlainAndSealed) {
  for (bool sealed : {false, true}) {
    for (int p = 1; p <= 4; ++p) {
      InprocWorld world(p);
      expect_no_errors(world.run([&](Transport& t) {
        ChecksumChannel check;
        PlainChannel plain;
        Collectives coll(t, sealed ? static_cast<Channel&>(check) : plain);
        coll.set_segment_bytes(1000);
        for (int root = 0; root < p; ++root) {
          std::vector<float> v(2500, 0.0f);
          if (t.rank() == root) v = pattern_buffer(2500, root);
          coll.broadcast(std::span(v), root, static_cast<std::uint64_t>(root));
          EXPECT_EQ(v, pattern_buffer(2500, root));
        }
        coll.barrier();
        const std::array<std::byte, 3> mine{std::byte{1}, static_cast<std::byte>(t.rank()), std::byte{9}};
        const auto all = coll.allgather(mine, 2);
        ASSERT_EQ(all.size(), 3U * static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r)
          EXPECT_EQ(all[3U * static_cast<std::size_t>(r) + 1], static_cast<std::byte>(r));
        EXPECT_EQ(first_mismatch(all, 3), p > 1 ? 1 : -1);
      }));
    }
  }
}

TEST(InprocCollectives, TamperedBroadcastFailsToOpen) {
  FaultRule rule;
  rule.kind = FaultKind::FlipBit;
  rule.tag = tags::kBroadcast;
  rule.index = 1;
  InprocWorld world(3, FaultPlan{}.add(rule), 300ms);
  auto errors = world.run([](Transport& t) {
    ChecksumChannel ch;
    Collectives coll(t, ch);
    coll.set_segment_bytes(100);
    std::vector<std::byte> buf(1000, std::byte{7});
    coll.broadcast(buf, 0);
  });
  EXPECT_TRUE(any_contains({message_of(errors[1]), message_of(errors[2])}, "phase broadcast"));
}

}  // namespace
}  // namespace tt::comm
