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

#include "engine/train_options.h"

namespace tt {
namespace {

std::string fixture_path(const std::string& name) { return "tests/fixtures/train_options/" + name + ".json"; }

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
  o.data = "data-cache/tinyshakespeare";
  o.steps = 321;
  o.batch = 3;
  o.seq = 64;
  o.grad_accum = 2;
  o.lr = 3e-4f;
  o.min_lr_frac = 0.25f;
  o.warmup = 7;
  o.schedule = ScheduleKind::Constant;
  o.grad_clip = 0.5f;
  o.weight_decay = 0.01f;
  o.optimizer = OptimizerKind::Sgd;
  o.momentum = 0.8f;
  o.beta1 = 0.85f;
  o.beta2 = 0.99f;
  o.seed = 42;
  o.val_every = 10;
  o.val_batches = 4;
  o.save_every = 50;
  o.timing_warmup = 2;
  o.allreduce_algo = comm::AlgoRequest::Auto;
  o.bucket_mb = 4;
  o.overlap = false;
  o.segment_kb = 256;
  o.comm_wait = comm::WaitMode::Busy;
  o.check_replicas = 5;
  o.ingress_gbps = 3;
  o.link_gbps = 100;
  o.cc_transfer_us = 35.2;
  o.expect_dataset = std::string(64, 'a');
  o.expect_checkpoint = std::string(64, 'b');
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
  o.compute = ComputeMode::Emulated;
  o.gpu = "h100";
  o.gpu_precision = GpuPrecision::Bf16;
  o.gpu_tflops = 500;
  o.gpu_efficiency = 0.6;
  o.gpu_act_traffic = 1.5;
  o.gpu_aead_gbps = 40;
  o.link = LinkModel::Emulate;
  o.host.aead_gbps = 2.5;
  o.host.crypto_cores = 4;
  o.host.message_us = 3;
  o.host.bounce_reencrypt = true;
  o.tee.settings.mode = TeeMode::Cc;
  expect_fixture("emulated_gpu", o);
  o.time = TimeModel::Wall;
  o.allreduce = AllreduceAlgo::Ring;
  o.tee.settings.mode = TeeMode::Fast;
  o.tee.settings.device_crypto = Toggle::Off;
  expect_fixture("emulated_gpu_wall", o);
}

TEST(TrainOptionsJson, VendorBaselinesKeepTheirBytes) {
  TrainOptions o;
  o.allreduce = AllreduceAlgo::Mpi;
  expect_fixture("mpi", o);
  o.allreduce = AllreduceAlgo::Nccl;
  o.device = DeviceKind::Cuda;
  o.tf32 = true;
  expect_fixture("nccl_cuda", o);
}

}  // namespace
}  // namespace tt
