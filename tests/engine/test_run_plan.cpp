// engine/run_choices and engine/run/run_plan: the TEE policy (every mode's defaults, every switch on its
// own), validate(), which reports every conflicting choice of a run at once, and the plan resolved once
// from the options.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "engine/run/run_plan.h"

namespace tt {
namespace {

std::string error_of(const TrainOptions& p) {
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
  EXPECT_EQ(parse_enum<AllreduceProvider>("bogus"), std::nullopt);
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
  TrainOptions p;
  p.schedule.steps = 10;
  EXPECT_TRUE(plan_conflicts(p).empty());
  p.compute.mode = ComputeMode::Emulated;
  p.parallel.link = LinkModel::Emulate;
  p.parallel.cc_transfer_us = 5;
  p.tee.settings.mode = TeeMode::Cc;
  EXPECT_TRUE(plan_conflicts(p).empty());
}

TEST(RunPlan, EachConflictIsNamed) {
  TrainOptions p;
  p.schedule.steps = 10;
  auto one = [&](auto tweak, const std::string& expect) {
    TrainOptions q = p;
    tweak(q);
    const std::string e = error_of(q);
    EXPECT_NE(e.find(expect), std::string::npos) << e;
  };
  one([](TrainOptions& q) { q.compute.device = DeviceKind::Cuda, q.compute.mode = ComputeMode::Emulated; },
      "use one or the other");
  one([](TrainOptions& q) { q.parallel.allreduce = AllreduceProvider::Nccl; }, "add --device cuda");
  one([](TrainOptions& q) { q.compute.tf32 = true; }, "--tf32 applies to --device cuda only");
  one([](TrainOptions& q) { q.parallel.link = LinkModel::Emulate; }, "add --compute emulate");
  one([](TrainOptions& q) { q.parallel.cc_transfer_us = 1; }, "--cc-transfer-us");
  one([](TrainOptions& q) { q.compute.mode = ComputeMode::Emulated, q.checkpoints.save_every = 5; },
      "drop --save-every/--resume");
  one(
      [](TrainOptions& q) {
        q.tee.settings.mode = TeeMode::Fast, q.parallel.allreduce = AllreduceProvider::Mpi;
      },
      "--allreduce mpi sends gradients in plaintext");
  one([](TrainOptions& q) { q.tee.adversary = comm::parse_adversary("mitm"); }, "only TEE mode runs");
  one(
      [](TrainOptions& q) {
        q.tee.adversary = comm::parse_adversary("snoop"), q.parallel.allreduce = AllreduceProvider::Mpi;
      },
      "bypass");
  one([](TrainOptions& q) { q.schedule.timing_warmup = 10; }, "leaves no step to time");
  one([](TrainOptions& q) { q.schedule.seq = 64, q.model.context = 32; }, "--seq <= 32");
}

// Under --compute emulate --time wall, fast's gradients are sealed "on the GPU" as a wait and travel in
// clear: an adversary there would flip bytes unnoticed in a run that claims to be sealed. Where the
// host seals for real (cc, or fast with device crypto off), nothing claims to be sealed (TEE off), or
// virtual time seals a token per message, it may run.
TEST(RunPlan, AdversaryNeedsReallySealedMessages) {
  TrainOptions p;
  p.schedule.steps = 10;
  p.compute.mode = ComputeMode::Emulated;
  p.compute.time = TimeModel::Wall;
  p.tee.adversary = comm::parse_adversary("flip:3");
  p.tee.settings.mode = TeeMode::Fast;
  const std::string e = error_of(p);
  EXPECT_NE(e.find("--adversary needs messages that are really sealed"), std::string::npos) << e;
  EXPECT_NE(e.find("--tee-device-crypto off"), std::string::npos) << e;
  p.tee.settings.device_crypto = Toggle::Off;
  EXPECT_EQ(error_of(p), "");
  p.tee.settings.device_crypto = Toggle::Auto;
  p.tee.settings.mode = TeeMode::Cc;
  EXPECT_EQ(error_of(p), "");
  p.tee.settings.mode = TeeMode::Off;
  EXPECT_EQ(error_of(p), "");
  p.compute.mode = ComputeMode::Real;
  p.tee.settings.mode = TeeMode::Fast;
  EXPECT_EQ(error_of(p), "");
  p.compute.mode = ComputeMode::Emulated;
  p.compute.time = TimeModel::Auto;  // virtual: every ring message is a sealed token
  EXPECT_TRUE(p.compute.virtual_time());
  EXPECT_EQ(error_of(p), "");
}

// --time: virtual only for emulated compute (auto resolves by the compute mode), and only for our own
// algorithms, whose messages it models; the modelled host's figures must be usable.
TEST(RunPlan, VirtualTimeNeedsEmulatedComputeAndOurRing) {
  TrainOptions p;
  p.schedule.steps = 10;
  EXPECT_FALSE(p.compute.virtual_time());
  p.compute.time = TimeModel::Virtual;
  EXPECT_NE(error_of(p).find("--time virtual computes an emulated run's time"), std::string::npos);
  p.compute.mode = ComputeMode::Emulated;
  EXPECT_TRUE(p.compute.virtual_time());
  EXPECT_EQ(error_of(p), "");
  p.parallel.allreduce = AllreduceProvider::Mpi;
  EXPECT_NE(error_of(p).find("use --allreduce ring, or --time wall"), std::string::npos);
  p.compute.time = TimeModel::Wall;
  EXPECT_FALSE(p.compute.virtual_time());
  EXPECT_EQ(error_of(p), "");
  p.parallel.allreduce = AllreduceProvider::Ours;
  p.compute.time = TimeModel::Auto;
  p.compute.host.aead_gbps = 0;
  EXPECT_NE(error_of(p).find("--host-aead-gbps must be > 0"), std::string::npos);
  p.compute.host.aead_gbps = 3.36;
  p.compute.host.crypto_cores = -1;
  EXPECT_NE(error_of(p).find("--host-crypto-cores"), std::string::npos);
}

TEST(RunPlan, ExpectCheckpointNeedsResume) {
  TrainOptions p;
  p.schedule.steps = 10;
  p.checkpoints.expect = std::string(64, 'a');
  EXPECT_NE(error_of(p).find("--expect-checkpoint pins the checkpoint a run resumes from: add --resume"),
            std::string::npos);
  p.checkpoints.resume = "runs/ckpt";
  EXPECT_EQ(error_of(p), "");
}

TEST(RunPlan, EveryConflictInOneMessage) {
  TrainOptions p;
  p.schedule.steps = 10;
  p.compute.device = DeviceKind::Cuda;
  p.compute.mode = ComputeMode::Emulated;
  p.parallel.link = LinkModel::Emulate;
  p.parallel.allreduce = AllreduceProvider::Mpi;
  p.schedule.timing_warmup = 20;
  EXPECT_EQ(plan_conflicts(p).size(), 4u);
  const std::string e = error_of(p);
  EXPECT_EQ(e.rfind("4 conflicting options: (1) ", 0), 0u) << e;
  EXPECT_NE(e.find("(3) --time virtual models"), std::string::npos) << e;
  EXPECT_NE(e.find("(4) --timing-warmup 20"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);  // one line
}

// The plan is the options resolved once: --epochs becomes steps (image data only), the switches and
// the agreed JSON are those of the resolved options, and a conflicting choice never makes a plan.
TEST(RunPlan, ResolvesOnceAndRefusesConflicts) {
  TrainOptions o;
  o.schedule.steps = 10;
  o.tee.settings.mode = TeeMode::Cc;
  const RunPlan plan(o, /*images=*/nullptr, /*world=*/2);
  EXPECT_EQ(plan.schedule().steps, 10);
  EXPECT_EQ(plan.schedule().seq, o.schedule.seq);  // token models keep their sequence
  EXPECT_FALSE(plan.images());
  EXPECT_TRUE(plan.switches().on && plan.switches().cc);
  EXPECT_EQ(plan.switches().mode(), TeeMode::Cc);
  EXPECT_EQ(plan.json(), train_options_json(plan.options()));
  EXPECT_EQ(plan.json().at("tee").at("mode"), "cc");

  o.schedule.epochs = 2;  // token data: --epochs counts passes over images
  try {
    const RunPlan p(o, nullptr, 2);
    FAIL() << "--epochs on token data made a plan";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("for token data give --steps"), std::string::npos) << e.what();
  }
  o.schedule.epochs = 0;
  o.parallel.allreduce = AllreduceProvider::Mpi;  // sealed gradients over MPI_Allreduce
  EXPECT_THROW(RunPlan(o, nullptr, 2), InputError);
}

}  // namespace
}  // namespace tt
