// comm/cuda under mpirun (CTest: P = 1, 2, 3, all ranks on one GPU): DeviceRingAllreduce over
// StagedTransport(MpiTransport) compared BIT FOR BIT with the CPU RingAllreduce on the same inputs, a
// sealing test codec (per-hop and forward-wire), the staged transport's semantics and buffer reuse, and
// a codec that rejects one message (fatal RunError naming the context, no hang).
//
// Without a GPU every test reports GTEST_SKIP (CTest shows the entry as skipped). The skip is decided
// from an MPI_Allreduce over every rank's answer, so all ranks skip together and none waits for a peer.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/allreduce/ring_geometry.h"
#include "comm/channel.h"
#include "comm/cuda/cuda_util.h"
#include "comm/cuda/device_ring.h"
#include "comm/cuda/gpu_sealing_codec.h"
#include "comm/cuda/nccl_comm.h"
#include "comm/cuda/staged_transport.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport/mpi_transport.h"
#include "tee/digest.h"
#include "tests/comm/comm_test_util.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm::cuda {
namespace {

using comm::testing::context_checksum;
using comm::testing::expected_sum;
using comm::testing::first_wrong;
using comm::testing::pattern_buffer;

// True on every rank iff every rank sees a GPU; selects this rank's GPU when so.
bool gpu_on_every_rank() {
  int mine = device_count_or_zero() > 0 ? 1 : 0;
  int all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce (GPU check)");
  if (all == 0) return false;
  TT_CUDA_CHECK(cudaSetDevice(device_for_rank(MPI_COMM_WORLD)));
  return true;
}

#define REQUIRE_GPU_ON_EVERY_RANK() \
  if (!gpu_on_every_rank()) GTEST_SKIP() << "no CUDA device on every rank"

// A device float buffer with host upload / download.
class DeviceFloats {
 public:
  explicit DeviceFloats(const std::vector<float>& host)
      : bytes_(host.size() * sizeof(float)), n_(host.size()) {
    if (n_ > 0) {
      TT_CUDA_CHECK(cudaMemcpy(bytes_.data(), host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
      // A pageable host-to-device cudaMemcpy may return before its DMA lands, and the legacy stream it
      // runs on does not order the ring's non-blocking streams: finish it before the ring reads.
      TT_CUDA_CHECK(cudaDeviceSynchronize());
    }
  }
  float* data() const { return bytes_.as<float>(); }
  std::vector<float> download() const {
    std::vector<float> out(n_);
    if (n_ > 0)
      TT_CUDA_CHECK(cudaMemcpy(out.data(), bytes_.data(), n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

 private:
  DeviceBytes bytes_;
  std::size_t n_;
};

// Floats whose sum depends on the order of the adds (mixed signs, exponents over 20 binades), so a
// different reduction order would show in the bits.
std::vector<float> random_buffer(std::size_t n, int rank) {
  std::mt19937 gen(static_cast<std::uint32_t>(1234567 + 7919 * rank + n));
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-10, 10);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(mant(gen), exp(gen));
  return v;
}

// Index of the first element whose bits differ, or -1.
long first_bit_mismatch(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return static_cast<long>(i);
  }
  return -1;
}

std::vector<std::size_t> counts_for(int p) {
  const auto P = static_cast<std::size_t>(p);
  return {0, 1, P - 1, 1000003};
}

// A stand-in for the GPU AES-GCM codec: wire = plaintext + 8-byte FNV-1a over (context, plaintext),
// computed on the host. Exercises the ring's sealing path (wire buffers, overhead, forward-wire) and
// fails to open when sender and receiver disagree on any context field or byte. `reject` makes open
// throw for chosen contexts (the fault test).
class TagDeviceCodec final : public Channel {
 public:
  static constexpr std::size_t kOverhead = 8;
  std::string name() const override { return "test-tag"; }
  std::size_t overhead() const override { return kOverhead; }
  bool pass_through() const override { return false; }
  MemorySpace memory() const override { return MemorySpace::Device; }
  std::size_t parallelism() const override { return batch; }

  // Spans hold device pointers.
  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> out) override {
    std::vector<std::byte> wire(plain.size() + kOverhead);  // (plain bytes + 8,)
    if (!plain.empty())
      TT_CUDA_CHECK(cudaMemcpy(wire.data(), plain.data(), plain.size(), cudaMemcpyDeviceToHost));
    const std::uint64_t h = context_checksum(ctx, std::span(wire).first(plain.size()));
    std::memcpy(wire.data() + plain.size(), &h, kOverhead);
    TT_CUDA_CHECK(cudaMemcpy(out.data(), wire.data(), wire.size(), cudaMemcpyHostToDevice));
    // Channel's batch contract: output complete on return. A pageable cudaMemcpy to the device may
    // return before its DMA lands (seen on an H200: the staged send then read stale wire bytes).
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    ++seals;
  }

  void open(const MessageContext& ctx, std::span<const std::byte> in, std::span<std::byte> plain) override {
    if (reject && reject(ctx)) {
      rejected = to_string(ctx);
      throw RunError("test codec: rejected message at " + to_string(ctx));
    }
    std::vector<std::byte> wire(plain.size() + kOverhead);
    TT_CUDA_CHECK(cudaMemcpy(wire.data(), in.data(), wire.size(), cudaMemcpyDeviceToHost));
    std::uint64_t h = 0;
    std::memcpy(&h, wire.data() + plain.size(), kOverhead);
    if (h != context_checksum(ctx, std::span(wire).first(plain.size()))) {
      throw RunError("test codec: tag mismatch at " + to_string(ctx));
    }
    if (!plain.empty()) {
      TT_CUDA_CHECK(cudaMemcpy(plain.data(), wire.data(), plain.size(), cudaMemcpyHostToDevice));
      TT_CUDA_CHECK(cudaDeviceSynchronize());  // output complete on return (see seal)
    }
    ++opens;
  }

  std::size_t batch = 1;
  std::function<bool(const MessageContext&)> reject;
  std::string rejected;  // to_string of the context it rejected
  int seals = 0;
  int opens = 0;
};

// The CPU ring's answer for these inputs (plain channel, same options, same transport kind).
std::vector<float> cpu_ring(MpiTransport& t, std::vector<float> v, const RingOptions& opt,
                            const MessageContext& id) {
  RingAllreduce ring(t, opt);
  ring.allreduce_sum(v.data(), v.size(), id);
  return v;
}

std::vector<float> device_ring(DeviceRingAllreduce& ring, const std::vector<float>& v,
                               const MessageContext& id) {
  DeviceFloats d(v);
  ring.allreduce_sum(d.data(), v.size(), id);
  return d.download();
}

TEST(DeviceRing, BitIdenticalToCpuRingForAllCountsAndSegmentSizes) {
  REQUIRE_GPU_ON_EVERY_RANK();
  MpiTransport host;
  StagedTransport staged(host);
  Stream stream;
  const int p = host.size();
  for (std::size_t seg : {std::size_t{64} << 10, std::size_t{0}}) {
    RingOptions opt;
    opt.segment_bytes = seg;
    DeviceRingAllreduce ring(staged, stream.get(), opt);
    for (std::size_t n : counts_for(p)) {
      const MessageContext id{.step = 3, .bucket = static_cast<std::uint32_t>(n % 7)};
      // Small integers: the exact sum is known.
      const auto pat = pattern_buffer(n, host.rank());
      const auto got_pat = device_ring(ring, pat, id);
      const long bad = first_wrong(got_pat, p);
      EXPECT_EQ(bad, -1) << "P=" << p << " count=" << n << " segment_bytes=" << seg << " got "
                         << (bad >= 0 ? got_pat[static_cast<std::size_t>(bad)] : 0.0f) << " want "
                         << (bad >= 0 ? expected_sum(static_cast<std::size_t>(bad), p) : 0.0f) << " own "
                         << (bad >= 0 ? pat[static_cast<std::size_t>(bad)] : 0.0f);
      EXPECT_EQ(first_bit_mismatch(got_pat, cpu_ring(host, pat, opt, id)), -1) << "count=" << n;
      // Order-sensitive floats: the same bits as the CPU ring means the same adds in the same order.
      const auto rnd = random_buffer(n, host.rank());
      const auto got_rnd = device_ring(ring, rnd, id);
      EXPECT_EQ(first_bit_mismatch(got_rnd, cpu_ring(host, rnd, opt, id)), -1)
          << "P=" << p << " count=" << n << " segment_bytes=" << seg;
      // Warm: the same bucket again allocates no pinned staging memory.
      const std::size_t allocs = staged.pool().allocations();
      const auto again = device_ring(ring, rnd, id);
      EXPECT_EQ(first_bit_mismatch(again, got_rnd), -1);
      EXPECT_EQ(staged.pool().allocations(), allocs) << "count=" << n << " segment_bytes=" << seg;
    }
  }
}

TEST(DeviceRing, SealingCodecPerHopAndForwardWireMatchCpuRing) {
  REQUIRE_GPU_ON_EVERY_RANK();
  MpiTransport host;
  StagedTransport staged(host);
  Stream stream;
  const int p = host.size();
  for (AllGatherMode mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
    for (std::size_t batch : {std::size_t{1}, std::size_t{3}}) {
      TagDeviceCodec codec;
      codec.batch = batch;
      RingOptions opt;
      opt.segment_bytes = 4096;
      opt.all_gather = mode;
      DeviceRingAllreduce ring(staged, codec, stream.get(), opt);
      for (std::size_t n : {std::size_t{1}, static_cast<std::size_t>(p) + 1, std::size_t{100003}}) {
        const MessageContext id{.step = 11, .bucket = 2};
        const auto rnd = random_buffer(n, host.rank());
        const auto got = device_ring(ring, rnd, id);
        EXPECT_EQ(first_bit_mismatch(got, cpu_ring(host, rnd, RingOptions{.segment_bytes = 4096}, id)), -1)
            << all_gather_mode_name(mode) << " batch=" << batch << " P=" << p << " count=" << n;
      }
      if (p > 1) {
        EXPECT_GT(codec.seals, 0);
        EXPECT_GT(codec.opens, 0);
      }
    }
  }
}

// Test link and group secrets (the handshake is tested in test_secure_session).
ChannelKeys ring_test_keys(int rank, int p) {
  auto secret = [](const std::string& label) {
    const auto d = tee::sha256(label);
    return tee::SecretBytes(tee::ByteView(d));
  };
  ChannelKeys k;
  k.send = tee::StreamSecret(secret("link " + std::to_string(rank)));
  k.recv = tee::StreamSecret(secret("link " + std::to_string((rank + p - 1) % p)));
  k.group = tee::GroupTrafficSecret(secret("group"));
  return k;
}

// TEE fast on a real GPU: the ring sealed by the GPU AES-GCM gives the plain CPU ring's bits, per hop
// and forward-wire, across rekeys; and the GPU codec and the host ring take turns on ONE channel's key
// streams (as the trainer's ring and its host collectives do) without the counters drifting apart.
TEST(DeviceRing, GpuAesGcmRingMatchesCpuRingAndSharesKeyStreamsWithTheHostChannel) {
  REQUIRE_GPU_ON_EVERY_RANK();
  MpiTransport host;
  StagedTransport staged(host);
  Stream stream;
  const int p = host.size();
  for (AllGatherMode mode : {AllGatherMode::PerHop, AllGatherMode::ForwardWire}) {
    SealedChannelOptions so;
    so.rank = host.rank();
    so.world_size = p;
    so.run_id.fill(0x33);
    so.rekey.max_bytes = 1 << 20;  // rekeys within every call below
    SealedChannel channel(so, ring_test_keys(host.rank(), p));
    GpuSealingCodec codec(channel, stream.get(), 8);
    RingOptions opt;
    opt.segment_bytes = 64 << 10;
    opt.all_gather = mode;
    DeviceRingAllreduce gpu_ring(staged, codec, stream.get(), opt);
    RingAllreduce host_ring(host, channel, opt);
    for (std::uint64_t step = 0; step < 4; ++step) {
      const std::size_t n = 300007 + step;
      const MessageContext id{.step = step, .bucket = 1};
      const auto rnd = random_buffer(n, host.rank() + static_cast<int>(step));
      const auto want = cpu_ring(host, rnd, RingOptions{.segment_bytes = 64 << 10}, id);
      std::vector<float> got = rnd;
      if (step % 2 == 0) {
        got = device_ring(gpu_ring, rnd, id);
      } else {
        host_ring.allreduce_sum(got.data(), n, id);
      }
      EXPECT_EQ(first_bit_mismatch(got, want), -1) << all_gather_mode_name(mode) << " P=" << p << " step "
                                                   << step << (step % 2 ? " (host)" : " (GPU)");
    }
    if (p > 1) {
      EXPECT_GT(channel.rekeys(), 0u);
    }
  }
}

// Index of the first element of `r` whose bits differ, or -1.
long first_bit_mismatch_in(const std::vector<float>& a, const std::vector<float>& b, ElemRange r) {
  for (std::size_t i = r.offset; i < r.offset + r.count; ++i) {
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return static_cast<long>(i);
  }
  return -1;
}

// --shard on a GPU (Note [Shard layout], engine/gradients/shard.h): the device ring's reduce-scatter leaves
// this rank the host ring's finished sum of its owned chunk bit for bit, and its all-gather then gives
// every rank the host ring's all-reduce, plaintext (--tee off) and sealed by the GPU AES-GCM (--tee fast:
// forward-wire), for counts whose chunks are unequal (P = 2, 3) and that span several segments.
TEST(DeviceRing, ReduceScatterAndAllGatherMatchTheHostRingsHalves) {
  REQUIRE_GPU_ON_EVERY_RANK();
  MpiTransport host;
  StagedTransport staged(host);
  Stream stream;
  const int p = host.size();
  constexpr std::size_t kSegment = 64 << 10;
  for (const bool sealed : {false, true}) {
    SealedChannelOptions so;
    so.rank = host.rank();
    so.world_size = p;
    so.run_id.fill(0x44);
    SealedChannel channel(so, ring_test_keys(host.rank(), p));
    GpuSealingCodec codec(channel, stream.get(), 8);
    RingOptions opt;
    opt.segment_bytes = kSegment;
    opt.all_gather = sealed ? AllGatherMode::ForwardWire : AllGatherMode::PerHop;
    std::optional<DeviceRingAllreduce> ring;
    if (sealed) {
      ring.emplace(staged, codec, stream.get(), opt);
    } else {
      ring.emplace(staged, stream.get(), opt);
    }
    for (const std::size_t n : {static_cast<std::size_t>(p) + 1, std::size_t{100003}}) {
      const MessageContext id{.step = 9, .bucket = static_cast<std::uint32_t>(n % 5)};
      const std::vector<float> rnd = random_buffer(n, host.rank());
      std::vector<float> want_rs = rnd;
      RingAllreduce host_ring(host, RingOptions{.segment_bytes = kSegment});
      host_ring.reduce_scatter_sum(want_rs.data(), n, id, kSegment);
      const std::vector<float> want = cpu_ring(host, rnd, RingOptions{.segment_bytes = kSegment}, id);
      DeviceFloats d(rnd);
      ring->reduce_scatter_sum(d.data(), n, id);
      const ElemRange own = RingGeometry::owned_chunk(host.rank(), p, n);
      const std::string what =
          std::string(sealed ? "fast" : "off") + " P=" + std::to_string(p) + " count=" + std::to_string(n);
      EXPECT_EQ(first_bit_mismatch_in(d.download(), want_rs, own), -1) << "reduce-scatter, " << what;
      ring->all_gather(d.data(), n, id);
      EXPECT_EQ(first_bit_mismatch(d.download(), want), -1) << "all-gather, " << what;
    }
  }
}

TEST(StagedTransportTest, ShortReceiveCompletesWithTheBytesThatArrived) {
  REQUIRE_GPU_ON_EVERY_RANK();
  MpiTransport host;
  StagedTransport staged(host);
  EXPECT_EQ(staged.name(), "staged(mpi)");
  const std::vector<float> src = {1.5f, -2.0f, 3.25f};
  DeviceFloats from(src);
  DeviceFloats to(std::vector<float>(8, 0.0f));
  // A message to oneself: works at every P, through the same MPI path as a peer's.
  Request r =
      staged.irecv(host.rank(), {reinterpret_cast<std::byte*>(to.data()), 8 * sizeof(float)}, tags::kUser);
  Request s = staged.isend(host.rank(), {reinterpret_cast<const std::byte*>(from.data()), 3 * sizeof(float)},
                           tags::kUser);
  EXPECT_EQ(staged.wait(r), 3 * sizeof(float));
  EXPECT_EQ(staged.wait(s), 3 * sizeof(float));
  const auto got = to.download();
  EXPECT_EQ(got[0], 1.5f);
  EXPECT_EQ(got[1], -2.0f);
  EXPECT_EQ(got[2], 3.25f);
  EXPECT_EQ(got[3], 0.0f);  // past the message: untouched
  // A message longer than the receive buffer is an error, as on the host transport. Between two ranks:
  // Open MPI's self path does not report the truncation of a message to oneself.
  if (host.size() >= 2 && host.rank() < 2) {
    if (host.rank() == 1) {
      Request s2 = staged.isend(0, {reinterpret_cast<const std::byte*>(from.data()), 3 * sizeof(float)},
                                tags::kUser + 1);
      staged.wait(s2);
    } else {
      Request r2 = staged.irecv(1, {reinterpret_cast<std::byte*>(to.data()), sizeof(float)}, tags::kUser + 1);
      EXPECT_THROW(staged.wait(r2), RunError);
    }
  }
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

TEST(DeviceRing, RejectedMessageIsFatalOnEveryRankWithoutHanging) {
  REQUIRE_GPU_ON_EVERY_RANK();
  // Short timeout: the ranks that wait for the failed rank give up quickly. Small segments: every send
  // is an eager MPI message, so the abandoned ones leave nothing pending at MPI_Finalize.
  MpiTransport host(MPI_COMM_WORLD, std::chrono::milliseconds(3000));
  const int p = host.size();
  const int victim = p - 1;
  {
    StagedTransport staged(host);
    Stream stream;
    TagDeviceCodec codec;
    codec.reject = [&](const MessageContext& c) {
      return host.rank() == victim && c.phase == MessagePhase::ScatterReduce && c.hop == 0 && c.segment == 1;
    };
    RingOptions opt;
    opt.segment_bytes = 1024;
    DeviceRingAllreduce ring(staged, codec, stream.get(), opt);
    const auto v = pattern_buffer(3000, host.rank());
    DeviceFloats d(v);
    const auto t0 = std::chrono::steady_clock::now();
    if (p == 1) {
      // Nothing crosses a link at P = 1, so nothing can be rejected: the call is a no-op.
      ring.allreduce_sum(d.data(), v.size(), MessageContext{});
      EXPECT_EQ(first_bit_mismatch(d.download(), v), -1);
    } else {
      try {
        ring.allreduce_sum(d.data(), v.size(), MessageContext{.step = 5});
        ADD_FAILURE() << "rank " << host.rank() << ": the ring completed despite a rejected message";
      } catch (const RunError& e) {
        const std::string what = e.what();
        if (host.rank() == victim) {
          ASSERT_FALSE(codec.rejected.empty());
          EXPECT_NE(what.find("rejected message at " + codec.rejected), std::string::npos) << what;
          EXPECT_NE(what.find("phase scatter_reduce"), std::string::npos) << what;
        } else {
          // The others starve: a timeout naming this rank and the message it waited for.
          EXPECT_NE(what.find("device ring all-reduce on rank " + std::to_string(host.rank())),
                    std::string::npos)
              << what;
          EXPECT_NE(what.find("did not complete"), std::string::npos) << what;
        }
      }
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
    }
  }
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

}  // namespace
}  // namespace tt::comm::cuda
