// engine/run_plan: the TEE policy (every mode's defaults, every switch on its own) and validate(), which
// reports every conflicting choice of a run at once.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "engine/run_plan.h"

namespace tt {
namespace {

std::string error_of(const RunPlan& p) {
  try {
    validate(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RunPlan, NamesRoundTrip) {
  for (const auto& [n, e] : EnumNames<TeeMode>::all) EXPECT_EQ(parse_enum<TeeMode>(n), e);
  for (const auto& [n, e] : EnumNames<tee::Cipher>::all) EXPECT_EQ(std::string(enum_name(e)), n);
  EXPECT_EQ(parse_enum<AllreduceAlgo>("bogus"), std::nullopt);
  EXPECT_STREQ(name(ComputeMode::Emulated), "emulate");
  EXPECT_STREQ(name(LinkModel::Real), "real");
}

TEST(RunPlan, ModesResolveTheirSwitches) {
  TeeSettings s;
  EXPECT_FALSE(resolve_tee(s, false).on);
  s.mode = TeeMode::Cc;
  TeeSwitches cc = resolve_tee(s, true);
  EXPECT_TRUE(cc.on && cc.cc);
  EXPECT_FALSE(cc.pipeline || cc.forward_ag || cc.direct_ingress || cc.device_crypto);
  EXPECT_EQ(cc.crypto_threads, 1);
  s.mode = TeeMode::Fast;
  TeeSwitches fast = resolve_tee(s, true);
  EXPECT_TRUE(fast.pipeline && fast.forward_ag && fast.direct_ingress && fast.device_crypto);
  EXPECT_EQ(fast.crypto_threads, 2);
  // Device crypto exists only where gradients live on a GPU.
  EXPECT_FALSE(resolve_tee(s, false).device_crypto);
  // One switch at a time on cc, for the ablation.
  s.mode = TeeMode::Cc;
  s.forward_ag = Toggle::On;
  cc = resolve_tee(s, false);
  EXPECT_TRUE(cc.forward_ag);
  EXPECT_FALSE(cc.pipeline);
}

TEST(RunPlan, DeviceCryptoNeedsAnAesCipher) {
  TeeSettings s;
  s.mode = TeeMode::Fast;
  s.cipher = tee::Cipher::ChaCha20Poly1305;
  EXPECT_FALSE(resolve_tee(s, true).device_crypto);  // auto: the host seals
  s.device_crypto = Toggle::On;
  EXPECT_THROW(resolve_tee(s, true), InputError);
}

TEST(RunPlan, ConsistentPlansPass) {
  RunPlan p;
  p.steps = 10;
  EXPECT_TRUE(plan_conflicts(p).empty());
  p.compute = ComputeMode::Emulated;
  p.link = LinkModel::Emulate;
  p.cc_transfer_us = 5;
  p.tee.mode = TeeMode::Cc;
  EXPECT_TRUE(plan_conflicts(p).empty());
}

TEST(RunPlan, EachConflictIsNamed) {
  RunPlan p;
  p.steps = 10;
  auto one = [&](auto tweak, const std::string& expect) {
    RunPlan q = p;
    tweak(q);
    const std::string e = error_of(q);
    EXPECT_NE(e.find(expect), std::string::npos) << e;
  };
  one([](RunPlan& q) { q.device = DeviceKind::Cuda, q.compute = ComputeMode::Emulated; },
      "use one or the other");
  one([](RunPlan& q) { q.allreduce = AllreduceAlgo::Nccl; }, "add --device cuda");
  one([](RunPlan& q) { q.tf32 = true; }, "--tf32 applies to --device cuda only");
  one([](RunPlan& q) { q.link = LinkModel::Emulate; }, "add --compute emulate");
  one([](RunPlan& q) { q.cc_transfer_us = 1; }, "--cc-transfer-us");
  one([](RunPlan& q) { q.compute = ComputeMode::Emulated, q.checkpoints = true; },
      "drop --save-every/--resume");
  one([](RunPlan& q) { q.tee.mode = TeeMode::Fast, q.allreduce = AllreduceAlgo::Mpi; },
      "--allreduce mpi sends gradients in plaintext");
  one([](RunPlan& q) { q.adversary = comm::parse_adversary("mitm"); }, "only TEE mode runs");
  one([](RunPlan& q) { q.adversary = comm::parse_adversary("snoop"), q.allreduce = AllreduceAlgo::Mpi; },
      "bypass");
  one([](RunPlan& q) { q.timing_warmup = 10; }, "leaves no step to time");
  one([](RunPlan& q) { q.seq = 64, q.context = 32; }, "--seq <= 32");
}

// Under --compute emulate --time wall, fast's gradients are sealed "on the GPU" as a wait and travel in
// clear: an adversary there would flip bytes unnoticed in a run that claims to be sealed. Where the
// host seals for real (cc, or fast with device crypto off), nothing claims to be sealed (TEE off), or
// virtual time seals a token per message, it may run.
TEST(RunPlan, AdversaryNeedsReallySealedMessages) {
  RunPlan p;
  p.steps = 10;
  p.compute = ComputeMode::Emulated;
  p.time = TimeModel::Wall;
  p.adversary = comm::parse_adversary("flip:3");
  p.tee.mode = TeeMode::Fast;
  const std::string e = error_of(p);
  EXPECT_NE(e.find("--adversary needs messages that are really sealed"), std::string::npos) << e;
  EXPECT_NE(e.find("--tee-device-crypto off"), std::string::npos) << e;
  p.tee.device_crypto = Toggle::Off;
  EXPECT_EQ(error_of(p), "");
  p.tee.device_crypto = Toggle::Auto;
  p.tee.mode = TeeMode::Cc;
  EXPECT_EQ(error_of(p), "");
  p.tee.mode = TeeMode::Off;
  EXPECT_EQ(error_of(p), "");
  p.compute = ComputeMode::Real;
  p.tee.mode = TeeMode::Fast;
  EXPECT_EQ(error_of(p), "");
  p.compute = ComputeMode::Emulated;
  p.time = TimeModel::Auto;  // virtual: every ring message is a sealed token
  EXPECT_TRUE(p.virtual_time());
  EXPECT_EQ(error_of(p), "");
}

// --time: virtual only for emulated compute (auto resolves by the compute mode), and only for our own
// algorithms, whose messages it models; the modelled host's figures must be usable.
TEST(RunPlan, VirtualTimeNeedsEmulatedComputeAndOurRing) {
  RunPlan p;
  p.steps = 10;
  EXPECT_FALSE(p.virtual_time());
  p.time = TimeModel::Virtual;
  EXPECT_NE(error_of(p).find("--time virtual computes an emulated run's time"), std::string::npos);
  p.compute = ComputeMode::Emulated;
  EXPECT_TRUE(p.virtual_time());
  EXPECT_EQ(error_of(p), "");
  p.allreduce = AllreduceAlgo::Mpi;
  EXPECT_NE(error_of(p).find("use --allreduce ring, or --time wall"), std::string::npos);
  p.time = TimeModel::Wall;
  EXPECT_FALSE(p.virtual_time());
  EXPECT_EQ(error_of(p), "");
  p.allreduce = AllreduceAlgo::Ring;
  p.time = TimeModel::Auto;
  p.host.aead_gbps = 0;
  EXPECT_NE(error_of(p).find("--host-aead-gbps must be > 0"), std::string::npos);
  p.host.aead_gbps = 3.36;
  p.host.crypto_cores = -1;
  EXPECT_NE(error_of(p).find("--host-crypto-cores"), std::string::npos);
}

TEST(RunPlan, ExpectCheckpointNeedsResume) {
  RunPlan p;
  p.steps = 10;
  p.expect_checkpoint = true;
  EXPECT_NE(error_of(p).find("--expect-checkpoint pins the checkpoint a run resumes from: add --resume"),
            std::string::npos);
  p.resume = p.checkpoints = true;
  EXPECT_EQ(error_of(p), "");
}

TEST(RunPlan, EveryConflictInOneMessage) {
  RunPlan p;
  p.steps = 10;
  p.device = DeviceKind::Cuda;
  p.compute = ComputeMode::Emulated;
  p.link = LinkModel::Emulate;
  p.allreduce = AllreduceAlgo::Mpi;
  p.timing_warmup = 20;
  EXPECT_EQ(plan_conflicts(p).size(), 4u);
  const std::string e = error_of(p);
  EXPECT_EQ(e.rfind("4 conflicting options: (1) ", 0), 0u) << e;
  EXPECT_NE(e.find("(3) --time virtual models"), std::string::npos) << e;
  EXPECT_NE(e.find("(4) --timing-warmup 20"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);  // one line
}

}  // namespace
}  // namespace tt
