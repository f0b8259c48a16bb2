// GpuSealingCodec (TEE fast on a real GPU) against the CPU SealedChannel, in one process:
// - the GPU seals exactly the bytes the CPU channel seals for the same keys and message sequence: link,
//   group and pair streams, lengths around the AES block and tile sizes, batches that straddle rekeys;
// - the GPU opens what the CPU sealed (and the other way round);
// - a flipped ciphertext bit, a replayed message, a wrong-epoch header and a tampered clear header each
//   fail with the CPU channel's reason, name the message, and zero the bad plaintext; the good messages
//   of the same batch are opened.
// Without a GPU every test reports GTEST_SKIP (CTest shows the entry as skipped).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/cuda/cuda_util.h"
#include "comm/cuda/gpu_sealing_codec.h"
#include "comm/secure/sealed_channel.h"
#include "tee/digest.h"

namespace tt::comm::cuda {
namespace {

#define REQUIRE_GPU() \
  if (device_count_or_zero() == 0) GTEST_SKIP() << "no CUDA device"

constexpr int kWorld = 3;

tee::SecretBytes secret(const std::string& label) {
  const auto d = tee::sha256(label);
  return tee::SecretBytes(tee::ByteView(d));
}
ChannelKeys keys_for(int rank) {
  ChannelKeys k;
  k.send = tee::StreamSecret(secret("link " + std::to_string(rank)));
  k.recv = tee::StreamSecret(secret("link " + std::to_string((rank + kWorld - 1) % kWorld)));
  k.group = tee::GroupTrafficSecret(secret("group"));
  return k;
}
SealedChannelOptions options_for(int rank, std::uint64_t rekey_bytes) {
  SealedChannelOptions o;
  o.rank = rank;
  o.world_size = kWorld;
  o.run_id.fill(0x5a);
  o.rekey.max_bytes = rekey_bytes;
  return o;
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(gen() & 0xff);
  return v;
}

// Device copy of host bytes (synchronous: finished before any stream reads it).
DeviceBytes upload(const std::vector<std::byte>& v) {
  DeviceBytes d(v.size());
  if (!v.empty()) {
    TT_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size(), cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  return d;
}
std::vector<std::byte> download(const DeviceBytes& d, std::size_t n) {
  std::vector<std::byte> v(n);
  if (n > 0) TT_CUDA_CHECK(cudaMemcpy(v.data(), d.data(), n, cudaMemcpyDeviceToHost));
  return v;
}

// Messages rank 0 seals: ring link (receiver 1), its group stream (kAnyRank), a pair stream (to 2).
struct Message {
  MessageContext ctx;
  std::vector<std::byte> plain;
};
std::vector<Message> messages_of_rank0() {
  // The 1 MiB message comes early: with 512 KiB epochs its stream rekeys before the next message.
  const std::vector<std::size_t> lengths = {1, 15, (std::size_t{1} << 20) + 5, 16, 17, 255, 4096, 65536 + 3};
  std::vector<Message> out;
  std::uint32_t seg = 0;
  for (int receiver : {1, kAnyRank, 2}) {
    for (std::size_t n : lengths) {
      MessageContext c{.step = 7,
                       .bucket = 1,
                       .phase = MessagePhase::ScatterReduce,
                       .hop = 0,
                       .chunk = 2,
                       .segment = seg++,
                       .origin = 0,
                       .sender = 0,
                       .receiver = receiver,
                       .length = n};
      if (receiver == kAnyRank) c.phase = MessagePhase::AllGather;
      out.push_back({c, random_bytes(n, seg)});
    }
  }
  return out;
}

// Seals `msgs` on the GPU in batches of `batch`, returns the wire bytes.
std::vector<std::vector<std::byte>> gpu_seal(GpuSealingCodec& codec, const std::vector<Message>& msgs,
                                             std::size_t batch) {
  std::vector<DeviceBytes> in, out;
  std::vector<Channel::SealJob> jobs;  // spans of device memory
  for (const auto& m : msgs) {
    in.push_back(upload(m.plain));
    out.emplace_back(m.plain.size() + codec.overhead());
  }
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    jobs.push_back({msgs[i].ctx, {in[i].data(), msgs[i].plain.size()}, {out[i].data(), out[i].size()}});
  }
  for (std::size_t i = 0; i < jobs.size(); i += batch) {
    codec.seal_batch(std::span(jobs).subspan(i, std::min(batch, jobs.size() - i)));
  }
  std::vector<std::vector<std::byte>> wire;
  for (std::size_t i = 0; i < msgs.size(); ++i)
    wire.push_back(download(out[i], msgs[i].plain.size() + codec.overhead()));
  return wire;
}

std::vector<std::vector<std::byte>> cpu_seal(SealedChannel& ch, const std::vector<Message>& msgs) {
  std::vector<std::vector<std::byte>> wire;
  for (const auto& m : msgs) {
    wire.emplace_back(m.plain.size() + ch.overhead());
    ch.seal(m.ctx, m.plain, wire.back());
  }
  return wire;
}

TEST(GpuSealingCodec, SealsTheCpuChannelsBytesAcrossStreamsLengthsAndRekeys) {
  REQUIRE_GPU();
  Stream stream;
  for (std::size_t batch : {std::size_t{1}, std::size_t{5}, std::size_t{64}}) {
    // 512 KiB epochs: each stream rekeys after its 1 MiB message, inside the larger batches.
    SealedChannel cpu(options_for(0, 1u << 19), keys_for(0));
    SealedChannel gpu_side(options_for(0, 1u << 19), keys_for(0));
    GpuSealingCodec codec(gpu_side, stream.get(), batch);
    EXPECT_EQ(codec.name(), "gpu-sealed(aes-256-gcm)");
    EXPECT_EQ(codec.overhead(), cpu.overhead());
    const auto msgs = messages_of_rank0();
    const auto want = cpu_seal(cpu, msgs);
    const auto got = gpu_seal(codec, msgs, batch);
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << "batch " << batch << ": message " << i << " at "
                                 << to_string(msgs[i].ctx);
    }
    // The wires above are byte-identical, clear headers (epoch, counter) included: the same positions.
    EXPECT_GT(cpu.rekeys(), 0u);
    EXPECT_EQ(gpu_side.rekeys(), cpu.rekeys());
  }
}

// Rank 1 opens rank 0's link messages; rank 2 opens rank 0's group and pair messages.
struct Opener {
  SealedChannel channel;
  GpuSealingCodec codec;
  Opener(int rank, cudaStream_t s)
      : channel(options_for(rank, 1u << 19), keys_for(rank)), codec(channel, s, 64) {}
};

struct OpenBatch {
  std::vector<DeviceBytes> in, out;
  std::vector<Channel::OpenJob> jobs;  // spans of device memory
  void add(const MessageContext& ctx, const std::vector<std::byte>& wire) {
    in.push_back(upload(wire));
    out.emplace_back(wire.size() - kSealOverhead);
    jobs.push_back({ctx, {in.back().data(), wire.size()}, {out.back().data(), wire.size() - kSealOverhead}});
  }
  std::vector<std::byte> plain(std::size_t i) const { return download(out[i], jobs[i].plain.size()); }
};

TEST(GpuSealingCodec, OpensWhatTheCpuSealedAndTheCpuOpensWhatTheGpuSealed) {
  REQUIRE_GPU();
  Stream stream;
  const auto msgs = messages_of_rank0();
  SealedChannel cpu0(options_for(0, 1u << 19), keys_for(0));
  const auto wire = cpu_seal(cpu0, msgs);
  Opener r1(1, stream.get()), r2(2, stream.get());
  OpenBatch b1, b2;
  for (std::size_t i = 0; i < msgs.size(); ++i)
    (msgs[i].ctx.receiver == 1 ? b1 : b2).add(msgs[i].ctx, wire[i]);
  r1.codec.open_batch(b1.jobs);
  r2.codec.open_batch(b2.jobs);
  std::size_t i1 = 0, i2 = 0;
  for (const auto& m : msgs) {
    const auto got = m.ctx.receiver == 1 ? b1.plain(i1++) : b2.plain(i2++);
    EXPECT_EQ(got, m.plain) << to_string(m.ctx);
  }
  // The other way: GPU seals, the CPU channel of the receiver opens.
  SealedChannel gpu0(options_for(0, 1u << 19), keys_for(0));
  GpuSealingCodec codec0(gpu0, stream.get(), 64);
  const auto gwire = gpu_seal(codec0, msgs, 64);
  SealedChannel cpu1(options_for(1, 1u << 19), keys_for(1)), cpu2(options_for(2, 1u << 19), keys_for(2));
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    std::vector<std::byte> plain(msgs[i].plain.size());
    (msgs[i].ctx.receiver == 1 ? cpu1 : cpu2).open(msgs[i].ctx, gwire[i], plain);
    EXPECT_EQ(plain, msgs[i].plain) << to_string(msgs[i].ctx);
  }
}

// Seals three link messages 0 -> 1 on the CPU, lets `tamper` change the wire of message 1, opens the
// three in one GPU batch on rank 1; returns the error text ("" when none) and the three plaintexts.
struct TamperResult {
  std::string error;
  std::vector<std::vector<std::byte>> plain;
  std::vector<Message> msgs;
};
TamperResult open_tampered(const std::function<void(std::vector<std::vector<std::byte>>&)>& tamper) {
  Stream stream;
  std::vector<Message> msgs;
  for (std::uint32_t s = 0; s < 3; ++s) {
    MessageContext c{.step = 4,
                     .bucket = 0,
                     .phase = MessagePhase::ScatterReduce,
                     .hop = 1,
                     .chunk = 0,
                     .segment = s,
                     .origin = 0,
                     .sender = 0,
                     .receiver = 1,
                     .length = 5000};
    msgs.push_back({c, random_bytes(5000, 100 + s)});
  }
  SealedChannel cpu0(options_for(0, 1u << 19), keys_for(0));
  auto wire = cpu_seal(cpu0, msgs);
  tamper(wire);
  Opener r1(1, stream.get());
  OpenBatch b;
  for (std::size_t i = 0; i < msgs.size(); ++i) b.add(msgs[i].ctx, wire[i]);
  TamperResult r;
  r.msgs = msgs;
  try {
    r1.codec.open_batch(b.jobs);
  } catch (const ChannelIntegrityError& e) {
    r.error = e.what();
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.peer(), 0);
  }
  for (std::size_t i = 0; i < msgs.size(); ++i) r.plain.push_back(b.plain(i));
  return r;
}

void expect_rejected(const TamperResult& r, const std::string& reason) {
  ASSERT_FALSE(r.error.empty()) << "tampered message opened";
  EXPECT_NE(r.error.find(reason), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("rank 1: sealed message from rank 0 failed to open"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(to_string(r.msgs[1].ctx)), std::string::npos) << r.error;
  EXPECT_EQ(r.plain[0], r.msgs[0].plain);  // the good messages of the batch are opened
  EXPECT_EQ(r.plain[2], r.msgs[2].plain);
  EXPECT_EQ(r.plain[1], std::vector<std::byte>(5000, std::byte{0}));  // the bad one is zeroed
}

TEST(GpuSealingCodec, RefusesChaChaRatherThanUsingItsKeyWithAesGcm) {
  REQUIRE_GPU();
  Stream stream;
  SealedChannelOptions o = options_for(0, 1u << 19);
  o.cipher = tee::Cipher::ChaCha20Poly1305;
  SealedChannel chacha(o, keys_for(0));
  EXPECT_THROW(GpuSealingCodec(chacha, stream.get(), 1), InputError);
}

TEST(GpuSealingCodec, FlippedCiphertextBitIsATagMismatch) {
  REQUIRE_GPU();
  const auto r = open_tampered([](auto& w) { w[1][1234] ^= std::byte{0x10}; });
  expect_rejected(r, "tag mismatch: tampered or wrong key");
}

TEST(GpuSealingCodec, ReplayedMessageIsNamedAsReplayed) {
  REQUIRE_GPU();
  // Message 0's wire delivered again in place of message 1 (same size): counter 0 where 1 is expected.
  const auto r = open_tampered([](auto& w) { w[1] = w[0]; });
  expect_rejected(r, "replayed or reordered: nonce counter 0, expected 1");
}

TEST(GpuSealingCodec, MessageFromAnotherEpochIsReportedAsWrongEpoch) {
  REQUIRE_GPU();
  // What a message sealed under the next epoch's key looks like to this receiver: the tag fails and the
  // header names epoch 1.
  const auto r = open_tampered([](auto& w) {
    w[1][17] ^= std::byte{0x01};
    w[1][5000 + 16 + 3] ^= std::byte{0x01};  // be32 epoch 0 -> 1
  });
  expect_rejected(r, "wrong epoch: message says key epoch 1, expected 0");
}

TEST(GpuSealingCodec, TamperedClearHeaderFailsEvenThoughTheTagVerifies) {
  REQUIRE_GPU();
  // Only the counter in the clear header changed: the tag verifies under the nonce the receiver expects,
  // and the plaintext must still not be used.
  const auto r = open_tampered([](auto& w) { w[1][5000 + 16 + 11] ^= std::byte{0x04}; });
  expect_rejected(r, "clear header tampered");
}

}  // namespace
}  // namespace tt::comm::cuda
