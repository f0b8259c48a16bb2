// train_options_json is what every rank attests and agrees on (the configuration digest of Note
// [Agreed inputs]) and what a checkpoint records: its bytes must not change when the options' C++ shape
// does, or a checkpoint or a policy pinned to an older digest stops matching. The fixtures in
// tests/fixtures/train_options/ were written by this test (TT_WRITE_FIXTURES=1) at commit 6e46e23, before
// the options were grouped into parts; each case below must still produce them byte for byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/run/train_options.h"

namespace tt {
namespace {

std::string fixture_path(const std::string& name) {
  return "tests/fixtures/train_options/" + name + ".json";
}

void expect_fixture(const std::string& name, const TrainOptions& o) {
  const std::string got = train_options_json(o).dump(2) + "\n";
  if (std::getenv("TT_WRITE_FIXTURES") != nullptr) {
    std::ofstream(fixture_path(name)) << got;
    return;
  }
  std::ifstream in(fixture_path(name));
  ASSERT_TRUE(in) << "missing " << fixture_path(name);
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << name;
}

TEST(TrainOptionsJson, DefaultsKeepTheirBytes) {
  const TrainOptions o;
  expect_fixture("defaults", o);
}

TEST(TrainOptionsJson, EveryFieldKeepsItsBytes) {
  TrainOptions o;
  o.model.name = "gpt2-medium";
  o.data.path = "data-cache/tinyshakespeare";
  o.schedule.steps = 321;
  o.schedule.batch = 3;
  o.schedule.seq = 64;
  o.schedule.grad_accum = 2;
  o.schedule.lr = 3e-4f;
  o.schedule.min_lr_frac = 0.25f;
  o.schedule.warmup = 7;
  o.schedule.schedule = ScheduleKind::Constant;
  o.schedule.grad_clip = 0.5f;
  o.schedule.optimizer.weight_decay = 0.01f;
  o.schedule.optimizer.kind = OptimizerKind::Sgd;
  o.schedule.optimizer.momentum = 0.8f;
  o.schedule.optimizer.beta1 = 0.85f;
  o.schedule.optimizer.beta2 = 0.99f;
  o.schedule.seed = 42;
  o.schedule.val_every = 10;
  o.schedule.val_batches = 4;
  o.checkpoints.save_every = 50;
  o.schedule.timing_warmup = 2;
  o.parallel.algo = std::nullopt;  // auto
  o.parallel.bucket_mb = 4;
  o.parallel.overlap = false;
  o.parallel.shard = ShardStage::Optimizer;
  o.parallel.segment_kb = 256;
  o.parallel.wait = comm::WaitMode::Busy;
  o.parallel.check_replicas = 5;
  o.data.ingress_gbps = 3;
  o.parallel.link_gbps = 100;
  o.parallel.cc_transfer_us = 35.2;
  o.data.expect_dataset = std::string(64, 'a');
  o.checkpoints.expect = std::string(64, 'b');
  o.tee.settings.mode = TeeMode::Fast;
  o.tee.settings.cipher = tee::Cipher::ChaCha20Poly1305;
  o.tee.settings.rekey_mb = 128;
  o.tee.settings.pipeline = Toggle::Off;
  o.tee.settings.crypto_threads = 3;
  o.tee.allow_plain_data = true;
  expect_fixture("every_field", o);
}

TEST(TrainOptionsJson, EmulatedGpuKeepsItsBytes) {
  TrainOptions o;
  o.model.name = "gpt2-xl";
  o.compute.mode = ComputeMode::Emulated;
  o.compute.gpu.name = "h100";
  o.compute.gpu.precision = GpuPrecision::Bf16;
  o.compute.gpu.tflops = 500;
  o.compute.gpu.efficiency = 0.6;
  o.compute.gpu.act_traffic = 1.5;
  o.compute.gpu.aead_gbps = 40;
  o.parallel.link = LinkModel::Emulate;
  o.compute.host.aead_gbps = 2.5;
  o.compute.host.crypto_cores = 4;
  o.compute.host.message_us = 3;
  o.compute.host.bounce_reencrypt = true;
  o.tee.settings.mode = TeeMode::Cc;
  expect_fixture("emulated_gpu", o);
  o.compute.time = TimeModel::Wall;
  o.parallel.allreduce = AllreduceProvider::Ours;
  o.tee.settings.mode = TeeMode::Fast;
  o.tee.settings.device_crypto = Toggle::Off;
  expect_fixture("emulated_gpu_wall", o);
}

TEST(TrainOptionsJson, VendorBaselinesKeepTheirBytes) {
  TrainOptions o;
  o.parallel.allreduce = AllreduceProvider::Mpi;
  expect_fixture("mpi", o);
  o.parallel.allreduce = AllreduceProvider::Nccl;
  o.compute.device = DeviceKind::Cuda;
  o.compute.tf32 = true;
  expect_fixture("nccl_cuda", o);
}

}  // namespace
}  // namespace tt
