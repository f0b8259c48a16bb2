// The ring's automatic segment (engine/gradients/segments.h, Note [Ring segments under the eager limit]):
// the pick for each transport, MPI's eager limit read through MPI_T, and the agreement over ranks
// (under mpirun at P = 1 and 2).
#include <gtest/gtest.h>
#include <mpi.h>

#include "base/error.h"
#include "comm/secure/sealed_channel.h"
#include "comm/transport/mpi_tool_vars.h"
#include "engine/gradients/segments.h"
#include "tests/comm/mpi_test_env.h"

namespace tt {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

LinkFacts tcp(std::size_t limit) {
  return {.across_hosts = true, .eager_limit = limit, .name = "TCP"};
}

TEST(RingSegments, AnExplicitSizeIsKeptOnEveryTransport) {
  for (const LinkFacts& t : {LinkFacts{.name = "shared memory"}, tcp(65536), tcp(0)}) {
    const SegmentPick p = pick_segment(256, t);
    EXPECT_EQ(p.bytes, 256u * 1024);
    EXPECT_NE(p.why.find("--segment-kb"), std::string::npos) << p.why;
  }
}

TEST(RingSegments, AutomaticIsOneMebibyteWithinAHost) {
  EXPECT_EQ(pick_segment(0, LinkFacts{.name = "shared memory"}).bytes, kMiB);
  EXPECT_EQ(pick_segment(0, LinkFacts{.name = "emulated"}).bytes, kMiB);
}

TEST(RingSegments, AutomaticFitsTheTcpEagerLimitBetweenHosts) {
  const SegmentPick p = pick_segment(0, tcp(65536));
  // A sealed message (payload + header and tag) plus MPI's header stays within the limit.
  EXPECT_LE(p.bytes + comm::SealedChannel::kOverhead + kMpiHeaderBytes, 65536u);
  EXPECT_GT(p.bytes, 65536u - 256);
  EXPECT_EQ(p.bytes % 64, 0u);
  EXPECT_NE(p.why.find("eager limit, 65536 bytes"), std::string::npos) << p.why;
}

TEST(RingSegments, ARaisedLimitRaisesTheSegmentUpToOneMebibyte) {
  const std::size_t small = pick_segment(0, tcp(65536)).bytes;
  EXPECT_GT(pick_segment(0, tcp(262144)).bytes, small);
  EXPECT_EQ(pick_segment(0, tcp(kMiB + 4096)).bytes, kMiB);
  EXPECT_EQ(pick_segment(0, tcp(0)).bytes, kMiB);    // limit unknown (another MPI)
  EXPECT_EQ(pick_segment(0, tcp(100)).bytes, kMiB);  // too small to hold a sealed segment
}

TEST(RingSegments, ANegativeSizeIsAnInputError) {
  EXPECT_THROW(pick_segment(-1, tcp(65536)), InputError);
}

TEST(RingSegments, OpenMpisTcpEagerLimitIsReadThroughTheToolInterface) {
  // CTest runs this under Open MPI with the tcp transport selected (tt_test's MPI environment).
  const auto limit = comm::mpi_control_uint("btl_tcp_eager_limit");
  ASSERT_TRUE(limit.has_value());
  EXPECT_GE(*limit, 1024u);
  EXPECT_EQ(comm::mpi_control_string("pml").value_or(""), "ob1");
  EXPECT_FALSE(comm::mpi_control_uint("no_such_variable_in_any_mpi").has_value());
  EXPECT_FALSE(comm::mpi_control_string("btl_tcp_eager_limit").has_value());  // not a string
}

TEST(RingSegments, RanksAgreeOnTheSmallestEagerLimit) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Rank 0 was given a smaller limit than the others (hosts launched with different --mca values); a
  // limit no rank knows stays unknown.
  const LinkFacts agreed = agreed_link(tcp(rank == 0 ? 32768 : 65536), MPI_COMM_WORLD);
  EXPECT_EQ(agreed.eager_limit, 32768u);
  EXPECT_EQ(pick_segment(0, agreed).bytes, pick_segment(0, tcp(32768)).bytes);
  EXPECT_EQ(agreed_link(tcp(0), MPI_COMM_WORLD).eager_limit, 0u);
  // One rank that knows the limit is enough (another MPI on the others would not mix in one job).
  EXPECT_EQ(agreed_link(tcp(rank == size - 1 ? 65536 : 0), MPI_COMM_WORLD).eager_limit, 65536u);
}

TEST(RingSegments, ThisRanksTransportIsReadFromMpi) {
  const LinkFacts within = local_link(1, 1, /*emulated_links=*/false);
  EXPECT_FALSE(within.across_hosts);
  EXPECT_EQ(within.name, "shared memory");
  const LinkFacts across = local_link(1, 2, /*emulated_links=*/false);
  EXPECT_TRUE(across.across_hosts);
  EXPECT_EQ(across.eager_limit, comm::mpi_control_uint("btl_tcp_eager_limit").value_or(0));
  EXPECT_GT(across.eager_limit, 0u);
  const LinkFacts modelled = local_link(1, 2, /*emulated_links=*/true);
  EXPECT_EQ(modelled.eager_limit, 0u);
  EXPECT_EQ(pick_segment(0, modelled).bytes, kMiB);
}

// Within a host, ShmTransport's inline limit stands for MPI's eager limit (header included, as MPI's
// is), so auto's model prices a message of up to a slot as sent at once; across hosts TCP's still holds.
TEST(RingSegments, SharedMemoryChannelsSetTheLimitWithinAHost) {
  const LinkFacts shm = local_link(1, 1, /*emulated_links=*/false, 65536);
  EXPECT_EQ(shm.name, "shared-memory channels");
  EXPECT_EQ(shm.eager_limit, 65536u + kMpiHeaderBytes);
  EXPECT_EQ(pick_segment(0, shm).bytes, kMiB);
  const LinkFacts across = local_link(1, 2, /*emulated_links=*/false, 65536);
  EXPECT_EQ(across.eager_limit, comm::mpi_control_uint("btl_tcp_eager_limit").value_or(0));
}

}  // namespace
}  // namespace tt
