// VirtualRanks (comm/transport/virtual_ranks.h) under mpirun (P = 1 and 2 processes), three ranks per
// process as threads: the ring's sums are exact across in-process and MPI links, messages of one
// (sender, tag) arrive in send order and from the rank that sent them, a message longer than its receive is
// refused unread (FramingError) and the next one still arrives, and a silent peer times out naming the
// virtual ranks.
#include <gtest/gtest.h>

#include <array>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/transport/virtual_ranks.h"
#include "tests/comm/comm_test_util.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm {
namespace {

constexpr int kPerProcess = 3;

// Runs fn(transport) on one thread per local rank; returns each rank's failure (null: none).
std::vector<std::exception_ptr> on_ranks(VirtualRanks& ranks, const std::function<void(Transport&)>& fn) {
  std::vector<std::exception_ptr> errors(kPerProcess);
  {
    std::vector<std::jthread> threads;
    for (int k = 0; k < kPerProcess; ++k)
      threads.emplace_back([&, k] {
        try {
          fn(ranks.transport(k));
        } catch (...) {
          errors[static_cast<std::size_t>(k)] = std::current_exception();
        }
      });
  }
  return errors;
}

void expect_no_failure(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      ADD_FAILURE() << x.what();
    }
  }
}

VirtualRanks make_ranks() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return VirtualRanks(MPI_COMM_WORLD, kPerProcess, provided >= MPI_THREAD_MULTIPLE);
}

TEST(VirtualRanks, RingSumsAreExact) {
  VirtualRanks ranks = make_ranks();
  expect_no_failure(on_ranks(ranks, [](Transport& t) {
    int processes = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &processes);
    EXPECT_EQ(t.size(), processes * kPerProcess);
    for (std::size_t seg : {std::size_t{0}, std::size_t{4096}}) {
      RingOptions opt;
      opt.segment_bytes = seg;
      RingAllreduce ring(t, opt);
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 16) + 3}) {
        auto v = testing::pattern_buffer(n, t.rank());
        ring.allreduce_sum(v.data(), n, MessageContext{});
        EXPECT_EQ(testing::first_wrong(v, t.size()), -1) << "rank " << t.rank() << " count " << n;
      }
    }
  }));
}

// Every rank to every other on one tag: each message is matched to the rank that sent it, wherever
// the two live (Note [Virtual ranks]: over MPI, the tag names the sending thread). The ranks of a
// process send in the reverse of their order (each waits for the one above it), so over MPI the
// messages of one process arrive in the reverse of the order the receives were posted in.
TEST(VirtualRanks, EveryPairMatchesItsSender) {
  VirtualRanks ranks = make_ranks();
  expect_no_failure(on_ranks(ranks, [](Transport& t) {
    const auto p = static_cast<std::size_t>(t.size());
    const int local = t.rank() % kPerProcess;
    std::vector<int> mine(p, t.rank()), got(p, -1);  // (P,): what is sent, what came from each rank
    std::vector<Request> sends, recvs;
    for (int peer = 0; peer < t.size(); ++peer)
      if (peer != t.rank())
        recvs.push_back(t.irecv(
            peer, std::as_writable_bytes(std::span(&got[static_cast<std::size_t>(peer)], 1)), tags::kUser));
    int turn = 0;
    if (local < kPerProcess - 1) {
      Request r = t.irecv(t.rank() + 1, std::as_writable_bytes(std::span(&turn, 1)), tags::kUser + 1);
      t.wait(r);
    }
    for (int peer = 0; peer < t.size(); ++peer)
      if (peer != t.rank())
        sends.push_back(
            t.isend(peer, std::as_bytes(std::span(&mine[static_cast<std::size_t>(peer)], 1)), tags::kUser));
    if (local > 0) {
      Request s = t.isend(t.rank() - 1, std::as_bytes(std::span(&turn, 1)), tags::kUser + 1);
      t.wait(s);
    }
    t.wait_all(recvs);
    t.wait_all(sends);
    for (int peer = 0; peer < t.size(); ++peer) {
      if (peer != t.rank()) {
        EXPECT_EQ(got[static_cast<std::size_t>(peer)], peer) << "at rank " << t.rank();
      }
    }
  }));
}

TEST(VirtualRanks, OrderedAndLongMessagesRefusedUnread) {
  VirtualRanks ranks = make_ranks();
  expect_no_failure(on_ranks(ranks, [](Transport& t) {
    // Every rank sends to the next: two short messages and one too long, on one tag.
    const int next = (t.rank() + 1) % t.size(), prev = (t.rank() + t.size() - 1) % t.size();
    std::array<std::byte, 64> out{};
    out[0] = std::byte{1};
    Request a = t.isend(next, std::span(out).first(8), tags::kUser);
    Request b = t.isend(next, std::span(out).first(64), tags::kUser);
    Request c = t.isend(next, std::span(out).first(4), tags::kUser);
    std::array<std::byte, 16> in{};
    Request r1 = t.irecv(prev, in, tags::kUser);
    EXPECT_EQ(t.wait(r1), 8U);
    EXPECT_EQ(in[0], std::byte{1});
    Request r2 = t.irecv(prev, in, tags::kUser);
    EXPECT_THROW(t.wait(r2), FramingError);
    Request r3 = t.irecv(prev, in, tags::kUser);
    EXPECT_EQ(t.wait(r3), 4U);
    t.wait(a);
    t.wait(c);
    (void)b;  // refused unread: over MPI its send never completes, and its request is dropped
  }));
}

TEST(VirtualRanks, SilentPeerTimesOutNamingIt) {
  VirtualRanks ranks = make_ranks();
  expect_no_failure(on_ranks(ranks, [](Transport& t) {
    if (t.rank() != 0) return;
    t.set_timeout(std::chrono::milliseconds(100));
    std::array<std::byte, 4> in{};
    Request r = t.irecv(t.size() - 1, in, tags::kUser + 1);
    try {
      t.wait(r);
      ADD_FAILURE() << "no timeout";
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(t.size() - 1)), std::string::npos)
          << e.what();
    }
  }));
}

}  // namespace
}  // namespace tt::comm
