// NcclComm and NcclTransport under mpirun (CTest: P = 1, 2).
//
// NCCL needs one GPU per rank. With that (P = 1 anywhere, P = 2 on a two-GPU machine): the vendor
// all-reduce sums exactly, a self send/receive moves device bytes, and the device ring over NCCL matches
// the CPU ring bit for bit. With fewer GPUs than ranks (P = 2 on one GPU): NcclComm refuses on every
// rank with the clear one-GPU-per-rank error instead of hanging in NCCL.
//
// Without a GPU every test reports GTEST_SKIP (CTest shows the entry as skipped); the skip is agreed
// over MPI first so no rank waits for a peer that skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/cuda/cuda_util.h"
#include "comm/cuda/device_ring.h"
#include "comm/cuda/nccl_comm.h"
#include "comm/cuda/nccl_transport.h"
#include "comm/transport/mpi_transport.h"
#include "tests/comm/comm_test_util.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm::cuda {
namespace {

using comm::testing::first_wrong;
using comm::testing::pattern_buffer;

// Every rank's GPU count (0 when it sees none); the minimum over ranks decides for all of them.
int min_gpus_over_ranks() {
  int mine = device_count_or_zero();
  int all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce (GPU check)");
  return all;
}

int world_size() {
  int p = 1;
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &p), "MPI_Comm_size");
  return p;
}

std::vector<std::byte> download(const DeviceBytes& d, std::size_t n) {
  std::vector<std::byte> out(n);
  if (n > 0) TT_CUDA_CHECK(cudaMemcpy(out.data(), d.data(), n, cudaMemcpyDeviceToHost));
  return out;
}

void upload(const DeviceBytes& d, const void* src, std::size_t n) {
  if (n > 0) TT_CUDA_CHECK(cudaMemcpy(d.data(), src, n, cudaMemcpyHostToDevice));
}

// Single node (the CTest machines): more ranks than GPUs means two ranks share one.
bool enough_gpus_for_nccl(int gpus) {
  return gpus >= world_size();
}

TEST(NcclComm, RefusesTwoRanksOnOneGpuWithAClearError) {
  const int gpus = min_gpus_over_ranks();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device on every rank";
  TT_CUDA_CHECK(cudaSetDevice(device_for_rank(MPI_COMM_WORLD)));
  if (enough_gpus_for_nccl(gpus)) {
    // Nothing to refuse here (P = 1, or one GPU per rank): construction must succeed. Not a skip, so
    // CTest does not report the whole binary as skipped.
    EXPECT_NO_THROW(NcclComm comm(MPI_COMM_WORLD));
    return;
  }
  try {
    NcclComm comm(MPI_COMM_WORLD);
    ADD_FAILURE() << "NcclComm accepted " << world_size() << " ranks on " << gpus << " GPU(s)";
  } catch (const RunError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NCCL needs one GPU per rank; found " + std::to_string(world_size()) + " ranks on "),
              std::string::npos)
        << what;
  }
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

TEST(NcclComm, VendorAllreduceSumsExactly) {
  const int gpus = min_gpus_over_ranks();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device on every rank";
  if (!enough_gpus_for_nccl(gpus)) return;  // covered by RefusesTwoRanksOnOneGpuWithAClearError
  TT_CUDA_CHECK(cudaSetDevice(device_for_rank(MPI_COMM_WORLD)));
  NcclComm comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.size(), world_size());
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000003}}) {
    const auto v = pattern_buffer(n, comm.rank());
    DeviceBytes d(n * sizeof(float));
    upload(d, v.data(), n * sizeof(float));
    comm.allreduce_sum(d.as<float>(), n);
    std::vector<float> got(n);
    const auto bytes = download(d, n * sizeof(float));
    if (n > 0) std::memcpy(got.data(), bytes.data(), bytes.size());
    EXPECT_EQ(first_wrong(got, comm.size()), -1) << "count=" << n;  // P = 1: the identity
  }
}

TEST(NcclTransportTest, SelfSendReceiveAndSizeChecks) {
  const int gpus = min_gpus_over_ranks();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device on every rank";
  if (!enough_gpus_for_nccl(gpus)) return;
  TT_CUDA_CHECK(cudaSetDevice(device_for_rank(MPI_COMM_WORLD)));
  {
    NcclComm comm(MPI_COMM_WORLD);
    NcclTransport t(comm);
    EXPECT_EQ(t.name(), "nccl");
    std::vector<std::byte> src(4096);  // (4096,) bytes
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
    DeviceBytes from(src.size());
    DeviceBytes to(src.size());
    upload(from, src.data(), src.size());
    // Both posted before the wait: one NCCL group with a send to and a receive from oneself.
    Request s = t.isend(t.rank(), {from.data(), src.size()}, tags::kUser);
    Request r = t.irecv(t.rank(), {to.data(), src.size()}, tags::kUser);
    EXPECT_EQ(t.wait(r), src.size());
    EXPECT_EQ(t.wait(s), src.size());
    EXPECT_EQ(download(to, src.size()), src);
  }
  {
    // Unequal self sizes are refused before NCCL sees them (NCCL would hang); the communicator is then
    // marked failed and aborted on destruction.
    NcclComm comm(MPI_COMM_WORLD);
    NcclTransport t(comm);
    DeviceBytes buf(64);
    Request s = t.isend(t.rank(), {buf.data(), 16}, tags::kUser);
    Request r = t.irecv(t.rank(), {buf.data() + 32, 32}, tags::kUser);
    EXPECT_THROW(t.wait(r), RunError);
    EXPECT_TRUE(comm.failed());
    EXPECT_THROW((void)t.isend(t.rank(), {buf.data(), 16}, tags::kUser), RunError);
  }
}

TEST(NcclTransportTest, DeviceRingOverNcclMatchesCpuRing) {
  const int gpus = min_gpus_over_ranks();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device on every rank";
  if (!enough_gpus_for_nccl(gpus)) return;  // P ranks on fewer GPUs: test_device_ring (staged) covers it
  TT_CUDA_CHECK(cudaSetDevice(device_for_rank(MPI_COMM_WORLD)));
  NcclComm comm(MPI_COMM_WORLD);
  NcclTransport t(comm);
  MpiTransport host;
  Stream stream;
  for (std::size_t seg : {std::size_t{64} << 10, std::size_t{0}}) {
    RingOptions opt;
    opt.segment_bytes = seg;
    DeviceRingAllreduce ring(t, stream.get(), opt);
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(t.size()) + 1, std::size_t{1000003}}) {
      std::mt19937 gen(static_cast<std::uint32_t>(99 + 31 * t.rank() + n));
      std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
      std::vector<float> v(n);
      for (auto& x : v) x = dist(gen);
      DeviceBytes d(n * sizeof(float));
      upload(d, v.data(), n * sizeof(float));
      ring.allreduce_sum(d.as<float>(), n, MessageContext{.step = 1});
      const auto bytes = download(d, n * sizeof(float));
      RingAllreduce cpu(host, opt);
      cpu.allreduce_sum(v.data(), n, MessageContext{.step = 1});
      std::vector<std::byte> want(n * sizeof(float));
      if (n > 0) std::memcpy(want.data(), v.data(), want.size());
      EXPECT_EQ(bytes, want) << "P=" << t.size() << " count=" << n << " segment_bytes=" << seg;
    }
  }
}

}  // namespace
}  // namespace tt::comm::cuda
