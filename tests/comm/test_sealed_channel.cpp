// SealedChannel over the in-process transport: the sealed ring gives the plain ring's bits, message
// counts follow docs/design.md §5, every fault of the adversary ends in the specified error, nonces never
// repeat under one key, and rekeying is lock-step on both ends of every stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "base/error.h"
#include "comm/allreduce/allreduce_algo.h"
#include "comm/allreduce/ring_aead.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/collectives.h"
#include "comm/secure/sealed_channel.h"
#include "core/profiler.h"
#include "tee/digest.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using namespace std::chrono_literals;

std::string message_of(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

template <typename E>
bool is(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

// Test secrets: link s -> s+1 and the group secret, from fixed labels (the handshake is tested in
// test_secure_session).
tee::SecretBytes test_secret(const std::string& label) {
  const auto d = tee::sha256(label);
  return tee::SecretBytes(tee::ByteView(d));
}
ChannelKeys test_keys(int rank, int p) {
  ChannelKeys k;
  k.send = tee::StreamSecret(test_secret("link " + std::to_string(rank)));
  k.recv = tee::StreamSecret(test_secret("link " + std::to_string((rank + p - 1) % p)));
  k.group = tee::GroupTrafficSecret(test_secret("group"));
  return k;
}

// One sealed message as a wiretapper sees it: who sent it to whom (which names its key stream) and the
// clear header (the stream's key epoch and the message's counter in it). A key is one stream in one
// epoch; its positions are (sender, counter).
struct WireRecord {
  int sender = 0;
  int receiver = 0;
  std::uint32_t epoch = 0;
  std::uint64_t counter = 0;
  std::string key() const {
    return std::to_string(sender) + "->" + std::to_string(receiver) + " epoch " + std::to_string(epoch);
  }
};

// Records every message the channel seals from the wire bytes it wrote: nonce reuse is checked on the
// sealed output, with no hook in the channel.
class RecordingChannel final : public Channel {
 public:
  explicit RecordingChannel(Channel& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::size_t overhead() const override { return inner_.overhead(); }
  bool pass_through() const override { return inner_.pass_through(); }
  std::size_t parallelism() const override { return inner_.parallelism(); }
  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override {
    const SealJob job{ctx, plain, wire};
    seal_batch(std::span(&job, 1));
  }
  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override {
    inner_.open(ctx, wire, plain);
  }
  void seal_batch(std::span<const SealJob> jobs) override {
    inner_.seal_batch(jobs);
    for (const auto& j : jobs) {
      const auto* header =
          reinterpret_cast<const std::uint8_t*>(j.wire.data()) + j.plain.size() + tee::kTagSize;
      records.push_back({j.ctx.sender, j.ctx.receiver, tee::load_be32(header), tee::load_be64(header + 4)});
    }
  }
  void open_batch(std::span<const OpenJob> jobs) override { inner_.open_batch(jobs); }

  std::vector<WireRecord> records;

 private:
  Channel& inner_;
};

struct RingSetup {
  ReduceAlgo algo = ReduceAlgo::Ring;
  bool mixed = false;  // bucket i of the run takes kReduceAlgos[i % 3] instead of `algo`
  int ranks = 2;
  AllGatherMode mode = AllGatherMode::PerHop;
  std::size_t segment_bytes = 0;
  std::size_t threads = 1;
  tee::RekeyPolicy rekey{};
  bool record = false;
  bool collectives = false;  // also run broadcast / barrier / allgather through the channel each step
  int steps = 1;
  int buckets = 1;
  int node_ranks = 0;  // hier's ranks per node (0: one node, where hier runs the ring's hops)
  std::size_t count = 1000;
  FaultPlan faults{};
  std::chrono::milliseconds timeout{5000};
  std::function<void(int rank, SealedChannelOptions&, ChannelKeys&)> tweak;
};

struct Outcome {
  std::vector<std::vector<float>> data;  // per rank, after the last step
  std::vector<std::exception_ptr> errors;
  std::vector<std::array<int64_t, Profiler::kCounters>> counters;
  std::vector<std::vector<WireRecord>> nonces;
  std::vector<std::uint64_t> rekeys;
  std::vector<FaultKind> fired;
};

// Non-integer data, so a different summation order would show in the bits.
std::vector<float> noisy(std::size_t n, int rank, int step) {
  std::vector<float> v(n);
  std::uint32_t x =
      2654435761U * static_cast<std::uint32_t>(rank + 1) + static_cast<std::uint32_t>(step) * 97U;
  for (auto& f : v) {
    x = x * 1664525U + 1013904223U;
    f = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

Outcome run(const RingSetup& s, bool sealed = true) {
  InprocWorld world(s.ranks, s.faults, s.timeout);
  Outcome o;
  const auto n = static_cast<std::size_t>(s.ranks);
  o.data.resize(n);
  o.counters.resize(n);
  o.nonces.resize(n);
  o.rekeys.resize(n);
  o.errors = world.run([&](Transport& t) {
    const int r = t.rank();
    const auto ri = static_cast<std::size_t>(r);
    Profiler prof;
    SealedChannelOptions opt;
    opt.rank = r;
    opt.world_size = s.ranks;
    opt.crypto_threads = s.threads;
    opt.rekey = s.rekey;
    opt.run_id[0] = 7;
    ChannelKeys keys = test_keys(r, s.ranks);
    if (s.tweak) s.tweak(r, opt, keys);
    SealedChannel channel(opt, std::move(keys), &prof);
    PlainChannel plain;
    RecordingChannel recording(channel);
    Channel& ch = !sealed    ? static_cast<Channel&>(plain)
                  : s.record ? static_cast<Channel&>(recording)
                             : static_cast<Channel&>(channel);
    RingOptions ro;
    ro.segment_bytes = s.segment_bytes;
    ro.all_gather = s.mode;
    ro.node_ranks = s.node_ranks;
    HostReduceMemory memory;
    Allreducer algos(t, ch, memory, ro, &prof);
    Collectives coll(t, ch, &prof);
    coll.set_segment_bytes(512);
    for (int step = 0; step < s.steps; ++step) {
      for (int b = 0; b < s.buckets; ++b) {
        auto data = noisy(s.count, r, step * 16 + b);
        MessageContext id;
        id.step = static_cast<std::uint64_t>(step) + 5;  // not 0: the step must show in errors
        id.bucket = static_cast<std::uint32_t>(b) + 2;
        const int i = step * s.buckets + b;
        algos.allreduce_sum(s.mixed ? kReduceAlgos[static_cast<std::size_t>(i) % 3] : s.algo, data.data(),
                            data.size(), id);
        o.data[ri] = std::move(data);
      }
      if (s.collectives) {
        auto params = noisy(700, 0, step);
        if (r != 0) std::fill(params.begin(), params.end(), 0.0f);
        coll.broadcast(std::span(params), 0, static_cast<std::uint64_t>(step));
        EXPECT_EQ(params, noisy(700, 0, step));
        coll.barrier(static_cast<std::uint64_t>(step));
        const std::array<std::byte, 3> mine{std::byte{1}, static_cast<std::byte>(r), std::byte{3}};
        const auto all = coll.allgather(mine, static_cast<std::uint64_t>(step));
        EXPECT_EQ(all[3 * ri + 1], static_cast<std::byte>(r));
      }
    }
    o.counters[ri] = prof.counter_totals();
    o.nonces[ri] = std::move(recording.records);
    o.rekeys[ri] = channel.rekeys();
  });
  o.fired = world.faults_fired();
  return o;
}

void expect_ok(const Outcome& o) {
  for (std::size_t r = 0; r < o.errors.size(); ++r)
    EXPECT_FALSE(o.errors[r]) << "rank " << r << ": " << message_of(o.errors[r]);
}

std::int64_t counter(const Outcome& o, int rank, Counter c) {
  return o.counters[static_cast<std::size_t>(rank)][static_cast<std::size_t>(c)];
}

// ---------------------------------------------------------------------------------------------

// Sealing never changes the sum, for every algorithm: off, cc (whole chunks, per hop) and fast
// (segments, forward wire, crypto threads) give the plain run's bits.
class SealedAlgo : public ::testing::TestWithParam<ReduceAlgo> {};

TEST_P(SealedAlgo, BitIdenticalToPlain) {
  for (int p : {2, 3, 4, 5}) {
    for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
      for (std::size_t seg : {std::size_t{0}, std::size_t{4096}}) {
        for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
          for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{10007}}) {
            RingSetup s;
            s.algo = GetParam();
            s.ranks = p;
            s.mode = mode;
            s.segment_bytes = seg;
            s.threads = threads;
            s.count = count;
            s.buckets = 2;
            const auto plain = run(s, false);
            const auto sealed = run(s, true);
            expect_ok(plain);
            expect_ok(sealed);
            const std::string where = std::string(enum_name(s.algo)) + " P=" + std::to_string(p) + " " +
                                      all_gather_mode_name(mode) + " seg=" + std::to_string(seg) +
                                      " threads=" + std::to_string(threads) +
                                      " count=" + std::to_string(count);
            for (int r = 0; r < p; ++r) {
              const auto& a = plain.data[static_cast<std::size_t>(r)];
              const auto& b = sealed.data[static_cast<std::size_t>(r)];
              ASSERT_EQ(a.size(), b.size()) << where;
              // Compare as vectors: bitwise equal floats compare equal (no NaNs here), and an empty
              // buffer has no data pointer to hand to memcmp.
              EXPECT_EQ(a, b) << where << " rank " << r;
              EXPECT_EQ(a, plain.data[0]) << where;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SealedAlgo, ::testing::ValuesIn(kReduceAlgos),
                         [](const auto& param_info) { return std::string(enum_name(param_info.param)); });

// docs/design.md §5's table for rd and rhd at powers of two: log2 P and 2 log2 P seals and opens per
// rank and bucket, each counted as a gradient all-reduce message (ring_sealed).
TEST(SealedRecursive, MessageCountsMatchDesign) {
  for (int p : {2, 4, 8}) {
    for (ReduceAlgo algo : {ReduceAlgo::Rd, ReduceAlgo::Rhd}) {
      RingSetup s;
      s.algo = algo;
      s.ranks = p;
      s.count = static_cast<std::size_t>(p) * 256;
      s.buckets = 3;
      const auto o = run(s);
      expect_ok(o);
      const int log2p = p == 2 ? 1 : p == 4 ? 2 : 3;
      const std::int64_t per_bucket = algo == ReduceAlgo::Rd ? log2p : 2 * log2p;
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(counter(o, r, Counter::MessagesSealed), per_bucket * s.buckets)
            << enum_name(algo) << " P=" << p;
        EXPECT_EQ(counter(o, r, Counter::MessagesOpened), per_bucket * s.buckets)
            << enum_name(algo) << " P=" << p;
        EXPECT_EQ(counter(o, r, Counter::RingSealed), per_bucket * s.buckets)
            << enum_name(algo) << " P=" << p;
      }
    }
  }
}

// docs/design.md §5, reduction order: rd and rhd add in one pairwise tree, so they agree bit for bit
// (non-integer data: another order would show); the ring adds in a chain, the same only at P = 2.
TEST(SealedRecursive, RdAndRhdShareTheirBitsAndTheRingAtTwoRanks) {
  for (int p = 2; p <= 7; ++p) {
    RingSetup s;
    s.ranks = p;
    s.count = 10007;
    s.segment_bytes = 4096;
    s.algo = ReduceAlgo::Rd;
    const auto rd = run(s, false);
    s.algo = ReduceAlgo::Rhd;
    const auto rhd = run(s, false);
    s.algo = ReduceAlgo::Ring;
    const auto ring = run(s, false);
    expect_ok(rd);
    expect_ok(rhd);
    EXPECT_EQ(rd.data, rhd.data) << "P=" << p;
    if (p == 2) {
      EXPECT_EQ(rd.data, ring.data);
    }
  }
}

// The phase names of an algorithm's messages start with this.
std::string phase_prefix(ReduceAlgo a) {
  return a == ReduceAlgo::Ring ? "" : std::string(enum_name(a)) + "_";
}

// Every message of every algorithm, on every link (P = 3 folds, P = 4 does not): a flipped bit is an
// integrity failure (exit 3) on the receiver, naming the algorithm's phase and the step.
TEST_P(SealedAlgo, TamperingAnyMessageIsCaughtNamingAlgorithmAndStep) {
  // hier on one node is the ring's hops, already covered: it runs where it is hierarchical, P = 4 in
  // nodes of 2 (its intra-node, inter-node and gather phases each carry messages).
  const bool hier = GetParam() == ReduceAlgo::Hier;
  for (int p : hier ? std::vector<int>{4} : std::vector<int>{3, 4}) {
    int caught = 0;
    for (int src = 0; src < p; ++src) {
      for (int dst = 0; dst < p; ++dst) {
        for (std::size_t index = 0; src != dst; ++index) {
          FaultRule rule{FaultKind::FlipBit};
          rule.src = src;
          rule.dst = dst;
          rule.tag = tags::kRing;
          rule.index = index;
          rule.bit = 77;
          RingSetup s;
          s.algo = GetParam();
          s.ranks = p;
          s.node_ranks = hier ? 2 : 0;
          s.count = static_cast<std::size_t>(p) * 64 + 1;
          s.timeout = 500ms;  // the ranks the victim leaves waiting time out (a loaded machine is slow)
          s.faults.add(rule);
          const auto o = run(s);
          if (o.fired.empty()) break;  // the link carried `index` messages
          const auto& e = o.errors[static_cast<std::size_t>(dst)];
          const std::string what = message_of(e);
          EXPECT_TRUE(is<ChannelIntegrityError>(e)) << src << "->" << dst << " #" << index << ": " << what;
          EXPECT_NE(what.find("failed to open (tag mismatch"), std::string::npos) << what;
          EXPECT_NE(what.find("phase " + phase_prefix(GetParam())), std::string::npos) << what;
          EXPECT_NE(what.find(", hop "), std::string::npos) << what;
          ++caught;
        }
      }
    }
    EXPECT_GT(caught, p) << enum_name(GetParam()) << " P=" << p;
  }
}

TEST(SealedRing, AeadTimeAddsSealAndOpen) {
  const RingAeadBytes work{.sealed = 2'000'000, .opened = 4'000'000};
  EXPECT_DOUBLE_EQ(aead_time_us(work, 2.0, 4.0), 1000.0 + 1000.0);  // GB/s = 1e3 bytes/us
  EXPECT_EQ(ring_aead_bytes(0, 4, AllGatherMode::PerHop).sealed, 0U);
  EXPECT_EQ(ring_aead_bytes(100, 1, AllGatherMode::PerHop).opened, 0U);
  // Uneven chunks: the busiest rank's (ceil(10 / 4) = 3 floats) counts.
  EXPECT_EQ(ring_aead_bytes(10, 4, AllGatherMode::ForwardWire).sealed, 3U * 4 * (3 + 1));
}

TEST(SealedRing, MessageCountsMatchDesign) {
  for (int p : {2, 3, 4}) {
    for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
      RingSetup s;
      s.ranks = p;
      s.mode = mode;
      s.count = static_cast<std::size_t>(p) * 256;  // every chunk non-empty, one message per chunk
      s.buckets = 3;
      const auto o = run(s);
      expect_ok(o);
      const std::int64_t seals = mode == AllGatherMode::PerHop ? 2 * (p - 1) : p;  // docs/design.md §5
      const std::int64_t opens = 2 * (p - 1);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(counter(o, r, Counter::MessagesSealed), seals * s.buckets) << "P=" << p << " rank " << r;
        EXPECT_EQ(counter(o, r, Counter::MessagesOpened), opens * s.buckets) << "P=" << p << " rank " << r;
        EXPECT_EQ(counter(o, r, Counter::BytesOpened), opens * s.buckets * 256 * 4);
        // The bench's prediction of the AEAD work (the sealing-cost summary) is what the channel did.
        const RingAeadBytes work = ring_aead_bytes(s.count, p, mode);
        EXPECT_EQ(counter(o, r, Counter::BytesSealed), static_cast<std::int64_t>(work.sealed) * s.buckets);
        EXPECT_EQ(counter(o, r, Counter::BytesOpened), static_cast<std::int64_t>(work.opened) * s.buckets);
      }
      // Segments multiply both: 1 KiB segments cut each 1 KiB chunk... into one; 256 B into four.
      s.segment_bytes = 256;
      const auto seg = run(s);
      expect_ok(seg);
      for (int r = 0; r < p; ++r) EXPECT_EQ(counter(seg, r, Counter::MessagesSealed), 4 * seals * s.buckets);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The adversary on link 0 -> 1 of a 3-rank ring (chunks of 2 KiB, 1 KiB segments: two messages per hop).

// `rule` on the ring messages of the link src -> dst.
void add_link_fault(RingSetup& s, FaultRule rule, int src, int dst) {
  rule.src = src;
  rule.dst = dst;
  rule.tag = tags::kRing;
  s.faults.add(rule);
}

RingSetup fault_setup(FaultRule rule) {
  RingSetup s;
  s.ranks = 3;
  s.count = 3 * 512;
  s.segment_bytes = 1024;
  s.timeout = 400ms;
  add_link_fault(s, rule, 0, 1);
  return s;
}

void expect_names_message(const std::string& e, const std::string& reason) {
  EXPECT_NE(e.find("rank 1: sealed message from rank 0 failed to open (" + reason), std::string::npos) << e;
  EXPECT_NE(e.find("step 5, bucket 2, phase scatter_reduce, hop 0, chunk 0"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
}

TEST(SealedFaults, FlippedBitIsATagMismatch) {
  FaultRule rule{FaultKind::FlipBit};
  rule.bit = 77;
  const auto o = run(fault_setup(rule));
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[1])) << message_of(o.errors[1]);
  expect_names_message(message_of(o.errors[1]), "tag mismatch");
  // Flipping a bit of the clear header is caught too (the header never decides how to open).
  rule.bit = (1024 + SealedChannel::kOverhead) * 8 - 1;
  const auto h = run(fault_setup(rule));
  EXPECT_TRUE(is<ChannelIntegrityError>(h.errors[1])) << message_of(h.errors[1]);
  expect_names_message(message_of(h.errors[1]), "clear header tampered");
}

TEST(SealedFaults, ReplayIsCaught) {
  FaultRule rule{FaultKind::Replay};
  rule.index = 1;  // segment 1 replaced by segment 0
  const auto o = run(fault_setup(rule));
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[1]));
  const auto e = message_of(o.errors[1]);
  EXPECT_NE(e.find("replayed or reordered: nonce counter 0, expected 1"), std::string::npos) << e;
  EXPECT_NE(e.find("step 5, bucket 2, phase scatter_reduce, hop 0, chunk 0, segment 1"), std::string::npos)
      << e;
}

TEST(SealedFaults, ReorderIsCaught) {
  FaultRule rule{FaultKind::Reorder};
  rule.index = 0;  // segments 0 and 1 swap
  const auto o = run(fault_setup(rule));
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[1]));
  expect_names_message(message_of(o.errors[1]), "replayed or reordered");
}

// A longer message where a shorter one belongs (chunks of 1536 B: segments of 1024 and 512 B; segment 1
// replaced by segment 0, as a reorder across buckets delivers one) fails in the transport as a framing
// error, which the sealed ring reports as an integrity failure, never as a transport failure (exit 1).
TEST(SealedFaults, ALongerMessageWhereAShorterBelongsIsAnIntegrityFailure) {
  FaultRule rule{FaultKind::Replay};
  rule.index = 1;
  RingSetup s = fault_setup(rule);
  s.count = 3 * 384;
  const auto o = run(s);
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<IntegrityError>(o.errors[1])) << message_of(o.errors[1]);
  const std::string e = message_of(o.errors[1]);
  EXPECT_NE(
      e.find("a message of 1052 bytes from rank 0 (tag 100) is longer than the receive buffer of 540 bytes"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("(a sealed message out of its place)"), std::string::npos) << e;
}

TEST(SealedFaults, TruncationIsAnIntegrityFailure) {
  FaultRule rule{FaultKind::Truncate};
  rule.keep_bytes = 100;
  const auto o = run(fault_setup(rule));
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<IntegrityError>(o.errors[1])) << message_of(o.errors[1]);
  const auto e = message_of(o.errors[1]);
  EXPECT_NE(e.find("rank 1 got a short message from rank 0 (100 of 1052 bytes)"), std::string::npos) << e;
  EXPECT_NE(e.find("step 5, bucket 2, phase scatter_reduce, hop 0, chunk 0"), std::string::npos) << e;
  // Straight into the channel, a short wire is the channel's own error.
  SealedChannelOptions opt;
  opt.rank = 1;
  opt.world_size = 2;
  SealedChannel ch(opt, test_keys(1, 2));
  std::vector<std::byte> wire(10), plain(16);
  MessageContext c;
  c.sender = 0;
  c.receiver = 1;
  try {
    ch.open(c, wire, plain);
    ADD_FAILURE() << "short wire opened";
  } catch (const ChannelIntegrityError& err) {
    EXPECT_NE(std::string(err.what()).find("short message: 10 of 44 wire bytes"), std::string::npos)
        << err.what();
  }
}

TEST(SealedFaults, DropTimesOutOrBreaksTheSequence) {
  // The last message on link 0 -> 1 (all-gather hop 1, segment 1): nothing comes after it, so rank 1
  // waits in vain and the timeout names the message.
  FaultRule rule{FaultKind::Drop};
  rule.index = 7;
  const auto o = run(fault_setup(rule));
  ASSERT_EQ(o.fired.size(), 1U);
  EXPECT_TRUE(is<RunError>(o.errors[1])) << message_of(o.errors[1]);
  const auto e = message_of(o.errors[1]);
  EXPECT_NE(e.find("step 5, bucket 2, phase all_gather, hop 1, chunk 0, segment 1"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
  // An earlier drop lets the next message slide into its place: an integrity failure, at once.
  rule.index = 0;
  const auto gap = run(fault_setup(rule));
  EXPECT_TRUE(is<ChannelIntegrityError>(gap.errors[1])) << message_of(gap.errors[1]);
  expect_names_message(message_of(gap.errors[1]), "replayed or reordered: nonce counter 1, expected 0");
}

TEST(SealedFaults, WrongLinkKeyFailsAtTheFirstMessage) {
  RingSetup s;
  s.ranks = 3;
  s.timeout = 400ms;
  s.tweak = [](int rank, SealedChannelOptions&, ChannelKeys& k) {
    if (rank == 1) k.recv = tee::StreamSecret(test_secret("not the link key"));
  };
  const auto o = run(s);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[1]));
  expect_names_message(message_of(o.errors[1]), "tag mismatch: tampered or wrong key");
}

TEST(SealedFaults, WrongGroupKeyFailsInForwardWire) {
  RingSetup s;
  s.ranks = 3;
  s.mode = AllGatherMode::ForwardWire;
  s.timeout = 400ms;
  s.tweak = [](int rank, SealedChannelOptions&, ChannelKeys& k) {
    if (rank == 2) k.group = tee::GroupTrafficSecret(test_secret("not the group key"));
  };
  const auto o = run(s);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[2])) << message_of(o.errors[2]);
  const auto e = message_of(o.errors[2]);
  EXPECT_NE(e.find("rank 2: sealed message from rank 1 failed to open (tag mismatch"), std::string::npos)
      << e;
  EXPECT_NE(e.find("phase all_gather"), std::string::npos) << e;
  EXPECT_NE(e.find("receiver any"), std::string::npos) << e;
}

TEST(SealedFaults, WrongRunIdFails) {
  RingSetup s;
  s.timeout = 400ms;
  s.tweak = [](int rank, SealedChannelOptions& o, ChannelKeys&) {
    if (rank == 1) o.run_id[0] = 8;
  };
  const auto o = run(s);
  EXPECT_TRUE(is<ChannelIntegrityError>(o.errors[1]));
}

// ---------------------------------------------------------------------------------------------
// Nonces and rekeying

TEST(SealedNonces, NeverRepeatUnderOneKeyOverARun) {
  for (auto mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
    for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
      RingSetup s;
      s.ranks = 4;  // P = 4: the barrier's distance-2 messages use the off-ring pair streams
      s.mode = mode;
      s.threads = threads;
      s.segment_bytes = 1024;
      s.count = 4 * 700;
      s.steps = 12;
      s.buckets = 2;
      s.collectives = true;
      s.record = true;
      s.rekey.max_messages = 3;  // rotate every few messages: counters restart, keys must differ
      const auto o = run(s);
      expect_ok(o);
      std::set<std::tuple<std::string, int, std::uint64_t>> seen;
      std::set<std::string> keys;
      std::size_t total = 0;
      for (const auto& per_rank : o.nonces) {
        for (const auto& n : per_rank) {
          EXPECT_TRUE(seen.insert(std::make_tuple(n.key(), n.sender, n.counter)).second)
              << "nonce (" << n.sender << ", " << n.counter << ") repeated under key " << n.key();
          keys.insert(n.key());
          ++total;
        }
      }
      EXPECT_GT(total, 500U);
      EXPECT_GT(keys.size(), total / 4) << "rekeying every 3 messages must give many keys";
      for (std::size_t r = 0; r < o.rekeys.size(); ++r) EXPECT_GT(o.rekeys[r], 10U);
      // Results stay exact under all that rotation.
      RingSetup plain = s;
      plain.record = false;
      const auto ref = run(plain, false);
      for (std::size_t r = 0; r < o.data.size(); ++r) EXPECT_EQ(o.data[r], ref.data[r]);
    }
  }
}

// Buckets switching algorithm (ring, rd, rhd, ring, ...) share the channel's streams: a stream's counter
// counts every message on it whatever the algorithm, so no nonce repeats under a key.
TEST(SealedNonces, NeverRepeatAcrossAlgorithms) {
  for (int p : {3, 4}) {
    RingSetup s;
    s.mixed = true;
    s.ranks = p;
    s.segment_bytes = 1024;
    s.count = static_cast<std::size_t>(p) * 700;
    s.steps = 4;
    s.buckets = 3;
    s.record = true;
    s.rekey.max_messages = 5;
    const auto o = run(s);
    expect_ok(o);
    std::set<std::tuple<std::string, int, std::uint64_t>> seen;
    std::size_t total = 0;
    for (const auto& per_rank : o.nonces) {
      for (const auto& n : per_rank) {
        EXPECT_TRUE(seen.insert(std::make_tuple(n.key(), n.sender, n.counter)).second)
            << "P=" << p << ": nonce (" << n.sender << ", " << n.counter << ") repeated under key "
            << n.key();
        ++total;
      }
    }
    EXPECT_GT(total, 100U);
    RingSetup plain = s;
    plain.record = false;
    const auto ref = run(plain, false);
    for (std::size_t r = 0; r < o.data.size(); ++r) EXPECT_EQ(o.data[r], ref.data[r]);
  }
}

TEST(SealedNonces, RekeyIsLockStepAndAMismatchFailsLoudly) {
  RingSetup s;
  s.ranks = 3;
  s.segment_bytes = 512;
  s.count = 3 * 1024;
  s.rekey.max_bytes = 2048;  // every 4 segments
  s.steps = 3;
  const auto o = run(s);
  expect_ok(o);
  // Every rank seals as many messages on its send link as it opens on its receive link: same rekeys.
  for (std::size_t r = 0; r < o.rekeys.size(); ++r) {
    EXPECT_EQ(o.rekeys[r], o.rekeys[0]);
    EXPECT_EQ(o.counters[r][static_cast<std::size_t>(Counter::Rekeys)], static_cast<int64_t>(o.rekeys[r]));
  }
  EXPECT_GT(o.rekeys[0], 4U);

  // A receiver whose policy differs moves to another epoch at another message: the header says so.
  s.timeout = 400ms;
  s.tweak = [](int rank, SealedChannelOptions& opt, ChannelKeys&) {
    if (rank == 1) opt.rekey.max_bytes = 4096;
  };
  const auto bad = run(s);
  EXPECT_TRUE(is<ChannelIntegrityError>(bad.errors[1])) << message_of(bad.errors[1]);
  EXPECT_NE(message_of(bad.errors[1]).find("wrong epoch: message says key epoch 1, expected 0"),
            std::string::npos)
      << message_of(bad.errors[1]);
}

// ---------------------------------------------------------------------------------------------
// The channel on its own

TEST(SealedChannelUnit, BatchesAreDeterministicAcrossThreadCounts) {
  auto seal_all = [](std::size_t threads) {
    SealedChannelOptions opt;
    opt.world_size = 2;
    opt.crypto_threads = threads;
    opt.rekey.max_messages = 2;
    SealedChannel ch(opt, test_keys(0, 2));
    std::vector<std::byte> plain(64 * 100);
    for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<std::byte>(i * 31);
    std::vector<std::byte> wire(64 * (100 + SealedChannel::kOverhead));
    std::vector<Channel::SealJob> jobs;
    for (std::size_t i = 0; i < 64; ++i) {
      MessageContext c;
      c.chunk = static_cast<std::uint32_t>(i);
      c.sender = 0;
      c.receiver = 1;
      jobs.push_back(
          {c, std::span<const std::byte>(plain).subspan(i * 100, 100),
           std::span(wire).subspan(i * (100 + SealedChannel::kOverhead), 100 + SealedChannel::kOverhead)});
    }
    for (int round = 0; round < 3; ++round) ch.seal_batch(jobs);  // 192 messages, 95 rekeys
    return wire;
  };
  EXPECT_EQ(seal_all(1), seal_all(2));
  EXPECT_EQ(seal_all(1), seal_all(3));
}

TEST(SealedChannelUnit, WireCarriesNoPlaintextAndOpensBack) {
  SealedChannelOptions a;
  a.world_size = 2;
  SealedChannelOptions b = a;
  b.rank = 1;
  SealedChannel sender(a, test_keys(0, 2));
  SealedChannel receiver(b, test_keys(1, 2));
  EXPECT_EQ(sender.name(), "sealed(aes-256-gcm)");
  std::vector<std::byte> plain(256, std::byte{0x41}), wire(256 + sender.overhead()), back(256);
  MessageContext c;
  c.step = 9;
  c.sender = 0;
  c.receiver = 1;
  sender.seal(c, plain, wire);
  EXPECT_EQ(std::search(wire.begin(), wire.end(), plain.begin(), plain.begin() + 16), wire.end());
  receiver.open(c, wire, back);
  EXPECT_EQ(back, plain);
  // A context the receiver did not expect (another step) does not open, and the plaintext is wiped.
  sender.seal(c, plain, wire);
  c.step = 10;
  EXPECT_THROW(receiver.open(c, wire, back), ChannelIntegrityError);
  EXPECT_EQ(back, std::vector<std::byte>(256));
  // A rank may not seal as another rank.
  c.sender = 1;
  c.receiver = 0;
  EXPECT_THROW(sender.seal(c, plain, wire), RunError);
}

// The phase byte is in every sealed message's associated data, and its name in every error: the ring's
// all-gather and the small-blob allgather keep their values and names whatever their enumerators are called.
TEST(SealedChannelUnit, PhaseValuesAndNamesAreFixed) {
  EXPECT_EQ(static_cast<int>(MessagePhase::AllGather), 1);
  EXPECT_EQ(static_cast<int>(MessagePhase::BlobAllgather), 4);
  EXPECT_STREQ(phase_name(MessagePhase::AllGather), "all_gather");
  EXPECT_STREQ(phase_name(MessagePhase::BlobAllgather), "allgather");
  EXPECT_FALSE(is_allreduce_phase(MessagePhase::BlobAllgather));
}

// ---------------------------------------------------------------------------------------------
// Note [Sub-group streams]: hier's all-gathers under forward wire, 2 nodes of 3 and 3 nodes of 2.

// Forward wire gives the plain run's bits, and each rank seals every scatter-reduce hop but only the
// first hop of each all-gather (its own block, once per sub-group); the other hops forward.
TEST(SealedHier, ForwardWireSealsEachBlockOncePerSubGroup) {
  for (int g : {2, 3}) {
    for (std::size_t seg : {std::size_t{0}, std::size_t{1024}}) {
      RingSetup s;
      s.algo = ReduceAlgo::Hier;
      s.ranks = 6;
      s.node_ranks = g;
      s.segment_bytes = seg;
      s.count = 6 * 300 + 5;
      s.buckets = 2;
      const auto plain = run(s, false);
      s.mode = AllGatherMode::PerHop;
      const auto per_hop = run(s);
      s.mode = AllGatherMode::ForwardWire;
      const auto forward = run(s);
      expect_ok(plain);
      expect_ok(per_hop);
      expect_ok(forward);
      const std::string where = "G=" + std::to_string(g) + " seg=" + std::to_string(seg);
      const int nodes = 6 / g;
      for (int r = 0; r < 6; ++r) {
        EXPECT_EQ(forward.data[static_cast<std::size_t>(r)], plain.data[static_cast<std::size_t>(r)])
            << where;
        // Whole chunks: one message per hop.
        if (seg != 0) continue;
        EXPECT_EQ(counter(per_hop, r, Counter::RingSealed), 2 * (2 * (g - 1) + 2 * (nodes - 1))) << where;
        EXPECT_EQ(counter(forward, r, Counter::RingSealed), 2 * ((g - 1) + (nodes - 1) + 2)) << where;
        EXPECT_EQ(counter(forward, r, Counter::RingOpened), counter(per_hop, r, Counter::RingOpened))
            << where;
      }
      EXPECT_LT(counter(forward, 0, Counter::BytesSealed), counter(per_hop, 0, Counter::BytesSealed))
          << where;
    }
  }
}

// Nodes of 3, whole chunks: link 1 -> 2 carries rank 1's two local scatter-reduce hops, then (index 2)
// its own block sealed for the node's all-gather and (index 3) rank 0's block forwarded unchanged.
RingSetup hier_fault_setup(FaultRule rule) {
  RingSetup s;
  s.algo = ReduceAlgo::Hier;
  s.ranks = 6;
  s.node_ranks = 3;
  s.mode = AllGatherMode::ForwardWire;
  s.count = 6 * 64;
  s.timeout = 400ms;
  add_link_fault(s, rule, 1, 2);
  return s;
}

TEST(SealedHier, AFlippedOrReplayedForwardedMessageFailsNamingItsSubGroup) {
  FaultRule flip{FaultKind::FlipBit};
  flip.index = 3;
  flip.bit = 99;
  FaultRule replay{FaultKind::Replay};
  replay.index = 3;  // rank 1's own all-gather block again, where rank 0's forwarded one belongs
  for (const FaultRule& rule : {flip, replay}) {
    const auto o = run(hier_fault_setup(rule));
    ASSERT_EQ(o.fired.size(), 1U);
    ASSERT_TRUE(is<ChannelIntegrityError>(o.errors[2])) << message_of(o.errors[2]);
    const std::string e = message_of(o.errors[2]);
    EXPECT_NE(e.find("rank 2: sealed message from rank 1 failed to open"), std::string::npos) << e;
    EXPECT_NE(e.find("phase hier_local_all_gather, hop 0"), std::string::npos) << e;
    EXPECT_NE(e.find("origin 0, sender 0, receiver any"), std::string::npos) << e;
    EXPECT_NE(e.find("node group of ranks 0,1,2"), std::string::npos) << e;
  }
}

// The same message (step, bucket, phase, chunk, origin, sender) in two sub-groups is two messages under
// two keys: one sealed for rank 0's local-index group {0, 2} does not open in its node's group {0, 1}
// (nor under the world's group stream), and a rank outside a sub-group can neither open nor seal there.
TEST(SealedHier, ASubGroupsMessageDoesNotOpenInAnotherSubGroup) {
  std::vector<std::unique_ptr<SealedChannel>> ch;
  for (int r = 0; r < 4; ++r) {
    SealedChannelOptions o;
    o.rank = r;
    o.world_size = 4;
    ch.push_back(std::make_unique<SealedChannel>(o, test_keys(r, 4)));
  }
  const SubGroup node0{.kind = GroupKind::Node, .base = 0, .stride = 1, .size = 2};
  const SubGroup peers0{.kind = GroupKind::LocalIndex, .base = 0, .stride = 2, .size = 2};
  MessageContext c;
  c.step = 5;
  c.bucket = 2;
  c.phase = MessagePhase::HierLocalAllGather;
  c.chunk = 1;
  c.receiver = kAnyRank;
  c.group = peers0;
  std::vector<std::byte> plain(64, std::byte{0x5a}), wire(64 + SealedChannel::kOverhead), back(64);
  ch[0]->seal(c, plain, wire);
  MessageContext in_node = c;
  in_node.group = node0;
  EXPECT_THROW(ch[1]->open(in_node, wire, back), ChannelIntegrityError);
  MessageContext world = c;
  world.group = SubGroup{};
  EXPECT_THROW(ch[1]->open(world, wire, back), ChannelIntegrityError);
  EXPECT_THROW(ch[1]->open(c, wire, back), RunError);  // rank 1 is not in {0, 2}: no key to try
  ch[2]->open(c, wire, back);                          // the member it is for opens it
  EXPECT_EQ(back, plain);
  MessageContext foreign = c;
  foreign.sender = foreign.origin = 1;
  foreign.group = SubGroup{.kind = GroupKind::Node, .base = 2, .stride = 1, .size = 2};
  EXPECT_THROW(ch[1]->seal(foreign, plain, wire), RunError);
}

}  // namespace
}  // namespace tt::comm
