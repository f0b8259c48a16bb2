// Note [Sizes before receives] (comm/transport.h) over MpiTransport, under mpirun with 2 ranks, once
// over Open MPI's default transports (shared memory between the two ranks) and once over TCP alone
// (test_mpi_sizes.np2.tcp): a message longer than the receive posted for it is refused unread with a
// FramingError naming both sizes, never handed to MPI as a truncation (which Open MPI 4.1 answers
// with a segfault or a corrupt heap); the next message on the tag still arrives; receives keep their
// posting order, abandoned ones take nothing, wildcards are refused; on a sealed collective the
// refusal is an integrity failure.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/collectives.h"
#include "comm/transport/mpi_transport.h"
#include "tests/comm/comm_test_util.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm {
namespace {

constexpr std::size_t kHuge = std::size_t{64} << 20;  // what the attacker sends
constexpr std::size_t kEvidence = 731;                // where this many bytes belong
constexpr int kTag = tags::kUser + 7;
constexpr int kDone = tags::kUser + 8;

std::vector<std::byte> filled(std::size_t n, std::uint8_t value) {
  return std::vector<std::byte>(n, std::byte{value});
}

// The FramingError a wait throws, or "" when it throws none.
std::string framing_error(Transport& t, Request& r) {
  try {
    t.wait(r);
  } catch (const FramingError& e) {
    return e.what();
  }
  return "";
}

void expect_names_the_refusal(const std::string& what) {
  EXPECT_NE(what.find("rank 1: a message of 67108864 bytes from rank 0 (tag " + std::to_string(kTag) +
                      ") is longer than the receive buffer of 731 bytes; refused unread"),
            std::string::npos)
      << what;
}

// Rank 0: the huge message, then one of the right size (bytes 0x5a), on kTag; then a word on kDone
// once both are out of its hands. The huge send never completes (its receiver refuses it), so its
// request is dropped and its buffer kept until the test ends.
class Sender {
 public:
  explicit Sender(Transport& t) : t_(t), huge_(filled(kHuge, 0x11)), right_(filled(kEvidence, 0x5a)) {}
  void send() {
    huge_req_ = t_.isend(1, huge_, kTag);
    Request right = t_.isend(1, right_, kTag);
    t_.wait(right);
    Request done = t_.isend(1, std::span(right_).first(1), kDone);
    t_.wait(done);
  }

 private:
  Transport& t_;
  std::vector<std::byte> huge_;  // declared before huge_req_: alive until the request is gone
  std::vector<std::byte> right_;
  Request huge_req_;
};

// Waits for the word on kDone from `peer`: what it sent before has left its hands.
void wait_for_done(Transport& t, int peer = 0) {
  std::array<std::byte, 1> word{};
  Request done = t.irecv(peer, word, kDone);
  t.wait(done);
}

// The frame of a test whose rank 0 sends the huge message and then the fitting one while rank 1 runs
// `receive` on the transport, then waits for rank 0's done.
template <typename Receive>
void receive_what_rank0_sends(Receive receive) {
  MpiTransport t;
  if (t.size() != 2) GTEST_SKIP() << "one sender (rank 0) and one receiver (rank 1)";
  Collectives coll(t);
  Sender sender(t);
  if (t.rank() == 0) {
    sender.send();
  } else {
    receive(t);
    wait_for_done(t);
  }
  coll.barrier();
}

TEST(MpiSizes, AnOversizedMessageIsRefusedUnreadAndTheNextArrives) {
  receive_what_rank0_sends([](MpiTransport& t) {
    std::vector<std::byte> buf = filled(kEvidence, 0xee);
    Request r = t.irecv(0, buf, kTag);
    expect_names_the_refusal(framing_error(t, r));
    EXPECT_EQ(buf, filled(kEvidence, 0xee)) << "the refused message was written into the buffer";
    Request next = t.irecv(0, buf, kTag);
    EXPECT_EQ(t.wait(next), kEvidence);
    EXPECT_EQ(buf, filled(kEvidence, 0x5a));
  });
}

// Receives on one (peer, tag) match in posting order whichever is waited for first: a younger receive
// never takes the message an older one is owed, not even the one the older one refuses.
TEST(MpiSizes, ReceivesMatchInPostingOrderWhicheverWaitsFirst) {
  receive_what_rank0_sends([](MpiTransport& t) {
    std::vector<std::byte> older = filled(kEvidence, 0xee);
    std::vector<std::byte> younger = filled(kEvidence, 0xee);
    Request a = t.irecv(0, older, kTag);
    Request b = t.irecv(0, younger, kTag);
    EXPECT_EQ(t.wait(b), kEvidence);
    EXPECT_EQ(younger, filled(kEvidence, 0x5a));
    expect_names_the_refusal(framing_error(t, a));
    EXPECT_EQ(older, filled(kEvidence, 0xee));
  });
}

// A receive abandoned before its message came takes nothing: the messages sent after it was dropped
// go to the next receives, in order, the huge one refused there.
TEST(MpiSizes, AnAbandonedReceiveTakesNothing) {
  MpiTransport t;
  if (t.size() != 2) GTEST_SKIP() << "one sender (rank 0) and one receiver (rank 1)";
  Collectives coll(t);
  Sender sender(t);
  if (t.rank() == 0) {
    wait_for_done(t, 1);  // rank 1 has dropped its first receive
    sender.send();
  } else {
    {
      std::vector<std::byte> abandoned(kEvidence);
      Request dropped = t.irecv(0, abandoned, kTag);
      EXPECT_FALSE(t.test(dropped));  // polled once: nothing has been sent yet
    }
    std::array<std::byte, 1> word{};
    Request ready = t.isend(0, word, kDone);
    t.wait(ready);
    std::vector<std::byte> buf = filled(kEvidence, 0xee);
    Request r = t.irecv(0, buf, kTag);
    expect_names_the_refusal(framing_error(t, r));
    Request next = t.irecv(0, buf, kTag);
    EXPECT_EQ(t.wait(next), kEvidence);
    EXPECT_EQ(buf, filled(kEvidence, 0x5a));
    wait_for_done(t);
  }
  coll.barrier();
}

TEST(MpiSizes, AReceiveNamesItsPeerAndTag) {
  MpiTransport t;
  std::array<std::byte, 8> buf{};
  EXPECT_THROW((void)t.irecv(MPI_ANY_SOURCE, buf, kTag), RunError);
  EXPECT_THROW((void)t.irecv(0, buf, MPI_ANY_TAG), RunError);
  EXPECT_THROW((void)t.irecv(t.size(), buf, kTag), RunError);
}

// A sealed broadcast that meets a longer message where a segment belongs: an integrity failure (exit
// 3) naming the collective and both sizes, not a transport failure.
TEST(MpiSizes, AnOversizedMessageOnASealedCollectiveIsAnIntegrityFailure) {
  MpiTransport t;
  if (t.size() != 2) GTEST_SKIP() << "one sender (rank 0) and one receiver (rank 1)";
  Collectives control(t);
  testing::ChecksumChannel channel;
  Collectives sealed(t, channel);
  std::vector<std::byte> data(kEvidence);
  if (t.rank() == 0) {
    const std::vector<std::byte> huge = filled(kHuge, 0x11);
    Request r = t.isend(1, huge, tags::kBroadcast);
    wait_for_done(t, 1);
  } else {
    try {
      sealed.broadcast(data, 0);
      ADD_FAILURE() << "the broadcast took the oversized message";
    } catch (const IntegrityError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("collective failed at"), std::string::npos) << what;
      EXPECT_NE(what.find("a message of 67108864 bytes from rank 0"), std::string::npos) << what;
      EXPECT_NE(what.find("receive buffer of " + std::to_string(kEvidence + channel.overhead()) + " bytes"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("(a sealed message out of its place)"), std::string::npos) << what;
    }
    Request done = t.isend(0, std::span(data).first(1), kDone);
    t.wait(done);
  }
  control.barrier();
}

}  // namespace
}  // namespace tt::comm
