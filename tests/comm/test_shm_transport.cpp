// What only the shared-memory transport does (comm/transport/shm_transport.h, Note [Shared-memory channels]),
// under mpirun with P = 2 and 3: messages that arrive before their receive, more messages than a
// channel has slots, inline and long messages of one tag kept in send order (long ones read from the
// sender's memory and through MPI), sends completed out of order, a forged long-message address, an
// abandoned receive, an abandoned long send (a stopped peer, never an attack), and a set-up that cannot get
// its memory falling back to MPI on every rank; sums on receipt (Note [Shared buffers]) from private and
// shared memory, and a forged shared buffer. The Transport contract itself (ordering, short and long
// messages, timeouts, every collective and algorithm) is test_comm_mpi.cpp, built a second time over this
// transport as test_comm_shm.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/collectives.h"
#include "comm/transport/shared_buffer.h"
#include "comm/transport/shm_channel.h"
#include "comm/transport/shm_transport.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm {
namespace {

// Bytes of message `i` of length `n` from `rank`: any mix-up of messages or offsets shows.
std::vector<std::byte> message(int rank, int i, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t k = 0; k < n; ++k)
    v[k] = static_cast<std::byte>(
        (k * 13 + static_cast<std::size_t>(i) * 7 + static_cast<std::size_t>(rank)) & 0xFF);
  return v;
}

constexpr ShmLayout kSmall{.slot_bytes = 256, .slots = 2};

TEST(ShmTransport, EveryPeerOnThisHostIsReachedThroughSharedMemory) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  EXPECT_EQ(t.host_peers(), t.size() - 1);
  EXPECT_EQ(t.name(), "shm");
  EXPECT_EQ(t.fallback_reason(), "");
}

// Rank 0 sends 12 messages on two tags, inline (<= 256 bytes) and long, more than the channel's two
// slots hold; rank 1 posts its receives late and tag 2's before tag 1's. Each tag's messages arrive
// in send order, whole, with long messages read from the sender's memory and through MPI.
class LongPath : public ::testing::TestWithParam<bool> {};  // direct reads asked for

TEST_P(LongPath, LateReceivesFullChannelsAndMixedLengthsKeepSendOrder) {
  MpiTransport mpi;
  ShmLayout layout = kSmall;
  layout.direct_reads = GetParam();
  ShmTransport t(mpi, layout);
  if (!GetParam()) {
    EXPECT_FALSE(t.direct_reads());
  }
  Collectives coll(t);
  // Every rank of the host took the same path (a mixed host would mismatch headers and payloads).
  const std::vector<std::int32_t> mine{t.direct_reads() ? 1 : 0};
  const auto all = coll.allgather(std::as_bytes(std::span(mine)));
  for (std::size_t r = 0; r < all.size(); r += sizeof(std::int32_t))
    EXPECT_EQ(std::memcmp(all.data() + r, mine.data(), sizeof(std::int32_t)), 0);
  const std::vector<std::size_t> sizes{0, 1, 256, 257, 4096, 100, 70000, 255, 3, 1 << 20, 64, 512};
  if (t.rank() == 0) {
    std::vector<std::vector<std::byte>> out;
    std::vector<Request> reqs;
    for (std::size_t i = 0; i < sizes.size(); ++i) out.push_back(message(0, static_cast<int>(i), sizes[i]));
    for (std::size_t i = 0; i < sizes.size(); ++i)
      reqs.push_back(t.isend(1, out[i], tags::kUser + 1 + static_cast<int>(i % 2)));
    for (Request& r : reqs) t.wait(r);
  } else if (t.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // every inline slot is full by now
    for (const int tag_offset : {2, 1}) {
      for (std::size_t i = static_cast<std::size_t>(tag_offset - 1); i < sizes.size(); i += 2) {
        std::vector<std::byte> in(sizes[i] + 16);
        Request r = t.irecv(0, in, tags::kUser + tag_offset);
        ASSERT_EQ(t.wait(r), sizes[i]) << "message " << i;
        in.resize(sizes[i]);
        EXPECT_EQ(in, message(0, static_cast<int>(i), sizes[i])) << "message " << i;
      }
    }
  }
  coll.barrier();
}

// Rank 0 posts 200 long messages (more than a channel's done words, shm::kTickets) and waits for them
// last to first: the first send's word has been reused twice by then, and it still completes.
TEST_P(LongPath, ASendWaitedForAfterItsDoneWordWasReusedCompletes) {
  MpiTransport mpi;
  ShmLayout layout = kSmall;
  layout.direct_reads = GetParam();
  ShmTransport t(mpi, layout);
  constexpr int kMessages = 200;
  constexpr std::size_t kBytes = 300;  // longer than kSmall's 256-byte slots
  if (t.rank() == 0) {
    std::vector<std::vector<std::byte>> out;
    std::vector<Request> reqs;
    for (int i = 0; i < kMessages; ++i) out.push_back(message(0, i, kBytes));
    for (int i = 0; i < kMessages; ++i)
      reqs.push_back(t.isend(1, out[static_cast<std::size_t>(i)], tags::kUser));
    for (auto r = reqs.rbegin(); r != reqs.rend(); ++r) EXPECT_EQ(t.wait(*r), kBytes);
  } else if (t.rank() == 1) {
    for (int i = 0; i < kMessages; ++i) {
      std::vector<std::byte> in(kBytes);
      Request r = t.irecv(0, in, tags::kUser);
      ASSERT_EQ(t.wait(r), kBytes);
      EXPECT_EQ(in, message(0, i, kBytes)) << "message " << i;
    }
  }
  Collectives(t).barrier();
}

INSTANTIATE_TEST_SUITE_P(DirectAndMpi, LongPath, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "direct" : "mpi"; });

// Floats of message `i` of `n` from `rank`: small integers, so that every sum is exact.
std::vector<float> values(int rank, int i, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t k = 0; k < n; ++k)
    v[k] =
        static_cast<float>((k * 7 + static_cast<std::size_t>(i) * 13 + static_cast<std::size_t>(rank)) % 251);
  return v;
}

// Rank 0 sends float messages inline and long, each from private memory and from a buffer shared with
// the transport; rank 1 adds them on receipt into accumulators that already hold values, then stores
// one more from the shared buffer. Every sum is exact whichever way the bytes came: from the slot,
// read (process_vm_readv, or the shared buffer mapped), or through MPI.
TEST_P(LongPath, SumsOnReceiptAreExactWhicheverWayTheBytesCome) {
  MpiTransport mpi;
  ShmLayout layout = kSmall;
  layout.direct_reads = GetParam();
  ShmTransport t(mpi, layout);
  Collectives coll(mpi);
  std::string error;
  auto shared = SharedBuffer::create(std::size_t{1} << 20, error);
  ASSERT_TRUE(shared.has_value()) << error;
  ScopedShare share(t, *shared);
  const std::vector<std::size_t> counts{1, 64, 65, 5000, 100'000};  // 4 and 256 bytes fit a slot
  float* sh = shared->floats().data();
  if (t.rank() == 0) {
    std::vector<std::vector<float>> own(counts.size());
    std::vector<Request> sends;
    std::size_t off = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      own[i] = values(0, static_cast<int>(i), counts[i]);
      sends.push_back(t.isend(1, std::as_bytes(std::span(own[i])), tags::kUser));
      const auto v = values(0, static_cast<int>(i) + 100, counts[i]);
      std::copy(v.begin(), v.end(), sh + off);
      sends.push_back(t.isend(1, std::as_bytes(std::span(sh + off, counts[i])), tags::kUser));
      off += counts[i];
    }
    const auto v = values(0, 999, 3000);
    std::copy(v.begin(), v.end(), sh + off);
    sends.push_back(t.isend(1, std::as_bytes(std::span(sh + off, v.size())), tags::kUser));
    for (auto& r : sends) t.wait(r);
  } else if (t.rank() == 1) {
    ASSERT_TRUE(t.sums_on_receive(0));
    for (std::size_t i = 0; i < counts.size(); ++i) {
      for (const int from_shared : {0, 1}) {
        const auto start = values(1, static_cast<int>(i), counts[i]);
        const auto sent = values(0, static_cast<int>(i) + 100 * from_shared, counts[i]);
        std::vector<float> acc = start;
        Request r = t.irecv_sum(0, acc, tags::kUser);
        EXPECT_EQ(t.wait(r), counts[i] * sizeof(float));
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < counts[i]; ++k) wrong += acc[k] != start[k] + sent[k] ? 1 : 0;
        EXPECT_EQ(wrong, 0U) << counts[i] << " floats from " << (from_shared ? "shared" : "private")
                             << " memory";
      }
    }
    std::vector<float> in(3000);
    Request r = t.irecv(0, std::as_writable_bytes(std::span(in)), tags::kUser);
    EXPECT_EQ(t.wait(r), in.size() * sizeof(float));
    EXPECT_EQ(in, values(0, 999, 3000));
  }
  coll.barrier(1);
}

// More shared buffers than a receiver keeps mapped, each sent from twice, in turn: the oldest mapping
// makes room and a buffer seen again is mapped again; every sum stays exact.
TEST(ShmTransport, MoreSharedBuffersThanStayMappedStillSumExactly) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  Collectives coll(mpi);
  constexpr std::size_t kBuffers = 11;
  constexpr std::size_t kCount = 1000;  // 4000 bytes: long in 256-byte slots
  std::vector<SharedBuffer> buffers;
  std::string error;
  for (std::size_t b = 0; b < kBuffers; ++b) {
    auto sb = SharedBuffer::create(kCount * sizeof(float), error);
    ASSERT_TRUE(sb.has_value()) << error;
    buffers.push_back(std::move(*sb));
  }
  std::vector<std::unique_ptr<ScopedShare>> guards;
  for (const auto& b : buffers) guards.push_back(std::make_unique<ScopedShare>(t, b));
  for (int round = 0; round < 2; ++round) {
    for (std::size_t b = 0; b < kBuffers; ++b) {
      const int i = round * 100 + static_cast<int>(b);
      if (t.rank() == 0) {
        const auto v = values(0, i, kCount);
        std::copy(v.begin(), v.end(), buffers[b].floats().data());
        Request s = t.isend(1, std::as_bytes(buffers[b].floats().first(kCount)), tags::kUser);
        t.wait(s);
      } else if (t.rank() == 1) {
        std::vector<float> acc(kCount, 1.0f);
        Request r = t.irecv_sum(0, acc, tags::kUser);
        t.wait(r);
        const auto v = values(0, i, kCount);
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < kCount; ++k) wrong += acc[k] != v[k] + 1.0f ? 1 : 0;
        EXPECT_EQ(wrong, 0U) << "buffer " << b << ", round " << round;
      }
    }
  }
  guards.clear();
  coll.barrier(1);
}

// A message of bytes that are not whole floats cannot be added in: the receive says so and fails.
TEST(ShmTransport, SumOfAMessageThatIsNotWholeFloatsIsAnErrorNamingIt) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  Collectives coll(mpi);
  if (t.rank() == 0) {
    const auto m = message(0, 1, 7);
    Request s = t.isend(1, m, tags::kUser);
    t.wait(s);
  } else if (t.rank() == 1) {
    std::vector<float> acc(4);
    Request r = t.irecv_sum(0, acc, tags::kUser);
    try {
      t.wait(r);
      ADD_FAILURE() << "7 bytes were added in as floats";
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find("not whole, aligned floats"), std::string::npos) << e.what();
      EXPECT_NE(dynamic_cast<const FramingError*>(&e), nullptr) << e.what();
    }
  }
  coll.barrier(1);
}

// Every rank sends to every other at once, both ways, many rounds: no deadlock when all channels fill.
TEST(ShmTransport, AllToAllRoundsThroughTwoSlotChannels) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  const int p = t.size();
  for (int round = 0; round < 20; ++round) {
    const std::size_t n = round % 3 == 0 ? 5000 : 200;
    std::vector<std::vector<std::byte>> out, in;
    std::vector<Request> reqs;
    for (int q = 0; q < p; ++q) {
      if (q == t.rank()) continue;
      out.push_back(message(t.rank(), round, n));
      in.emplace_back(n);
    }
    std::size_t k = 0;
    for (int q = 0; q < p; ++q)
      if (q != t.rank()) reqs.push_back(t.isend(q, out[k++], tags::kUser));
    k = 0;
    for (int q = 0; q < p; ++q)
      if (q != t.rank()) reqs.push_back(t.irecv(q, in[k++], tags::kUser));
    for (Request& r : reqs) t.wait(r);
    k = 0;
    for (int q = 0; q < p; ++q) {
      if (q == t.rank()) continue;
      EXPECT_EQ(in[k++], message(q, round, n)) << "round " << round << " from " << q;
    }
  }
}

// A receive abandoned before its message came (an error unwinding) leaves the stream intact: the
// next receive of that tag gets the next message.
TEST(ShmTransport, AbandonedReceiveDoesNotTakeALaterMessage) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  Collectives coll(t);
  std::vector<std::byte> a(64), b(64);
  if (t.rank() == 1) {
    { Request gone = t.irecv(0, a, tags::kUser); }
    coll.barrier(1);
    Request r = t.irecv(0, b, tags::kUser);
    EXPECT_EQ(t.wait(r), 64U);
    EXPECT_EQ(b, message(0, 9, 64));
  } else {
    coll.barrier(1);
    if (t.rank() == 0) {
      const auto m = message(0, 9, 64);
      Request s = t.isend(1, m, tags::kUser);
      t.wait(s);
    }
  }
  coll.barrier(2);
}

// Note [Withdrawn sends]: rank 0 posts a long message and abandons it (its run is failing), then
// overwrites the buffer, as a freed and reused one would be; rank 1 receives it later, as a copy and
// as a sum. The receive fails as a stopped peer (RunError naming the withdrawal), never as an
// integrity failure, and its bytes are not delivered. A send completed normally is untouched by it.
class WithdrawnSend : public ::testing::TestWithParam<bool> {};  // the receive sums

TEST_P(WithdrawnSend, IsAStoppedPeerNeverAnIntegrityFailure) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  if (!t.direct_reads()) GTEST_SKIP() << "this host refuses process_vm_readv between the ranks";
  Collectives coll(mpi);
  constexpr std::size_t n = 4 * kSmall.slot_bytes;  // a direct read
  std::vector<std::byte> buf = message(0, 3, n);
  if (t.rank() == 0) {
    { Request gone = t.isend(1, buf, tags::kUser); }
    std::fill(buf.begin(), buf.end(), std::byte{0xEE});  // what a reused buffer would hold
    coll.barrier(1);
    const auto m = message(0, 4, n);
    Request s = t.isend(1, m, tags::kUser + 1);
    t.wait(s);
  } else if (t.rank() == 1) {
    coll.barrier(1);
    std::vector<float> acc(n / sizeof(float), 0.0F);
    std::vector<std::byte> into(n);
    Request r = GetParam() ? t.irecv_sum(0, acc, tags::kUser) : t.irecv(0, into, tags::kUser);
    try {
      t.wait(r, std::chrono::seconds(20));
      ADD_FAILURE() << "a withdrawn send was received";
    } catch (const IntegrityError& e) {
      ADD_FAILURE() << "a withdrawn send was reported as an attack: " << e.what();
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find("withdrawn while it was read: rank 0 stopped first"),
                std::string::npos)
          << e.what();
    }
    std::vector<std::byte> next(n);
    Request ok = t.irecv(0, next, tags::kUser + 1);
    EXPECT_EQ(t.wait(ok, std::chrono::seconds(20)), n);
    EXPECT_EQ(next, message(0, 4, n));
  } else {
    coll.barrier(1);
  }
  coll.barrier(2);
}

INSTANTIATE_TEST_SUITE_P(CopyAndSum, WithdrawnSend, ::testing::Bool());

TEST(ShmTransport, MessageLongerThanTheReceiveIsAnErrorNamingBoth) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  Collectives coll(t);
  const auto m = message(0, 1, 100);
  if (t.rank() == 0) {
    Request s = t.isend(1, m, tags::kUser);
    t.wait(s);
  } else if (t.rank() == 1) {
    std::vector<std::byte> in(50);
    Request r = t.irecv(0, in, tags::kUser);
    try {
      t.wait(r);
      ADD_FAILURE() << "a 100-byte message fit a 50-byte buffer";
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find("100 bytes from rank 0"), std::string::npos) << e.what();
      // A framing error: a sealed all-reduce reports it as an integrity failure (hop_runner.cpp).
      EXPECT_NE(dynamic_cast<const FramingError*>(&e), nullptr) << e.what();
    }
  }
  coll.barrier();
}

// Channels of 2 x 64 GiB do not fit any /dev/shm: every rank of the host says why and uses MPI.
TEST(ShmTransport, SetUpWithoutRoomFallsBackToMpiOnEveryRank) {
  MpiTransport mpi;
  ShmTransport t(mpi, ShmLayout{.slot_bytes = std::size_t{64} << 30, .slots = 2});
  EXPECT_EQ(t.host_peers(), 0);
  EXPECT_EQ(t.name(), "mpi");
  EXPECT_NE(t.fallback_reason(), "");
  Collectives coll(t);
  std::vector<std::int64_t> v{t.rank() + 1};
  const auto all = coll.allgather(std::as_bytes(std::span(v)));
  EXPECT_EQ(all.size(), sizeof(std::int64_t) * static_cast<std::size_t>(t.size()));
}

// Rank 1 receives from rank 0 through a channel something else wrote into: the receive must fail
// with an integrity error naming the channel. Returns its text ("" when nothing failed).
std::string corrupt_channel_error(ShmTransport& t, std::size_t buffer_bytes) {
  std::vector<std::byte> in(buffer_bytes);
  Request r = t.irecv(0, in, tags::kUser);
  try {
    t.wait(r);
    ADD_FAILURE() << "a corrupt channel was read as a message";
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("shared-memory channel with rank 0 is corrupt"), std::string::npos)
        << e.what();
    return e.what();
  }
  return "";
}

// A process of the host's user writes header `h` into slot 0 of rank 0's channel to rank 1, as one
// message written: rank 1's receive must fail as a corrupt channel. Returns its text on rank 1.
std::string forged_message_error(ShmTransport& t, Collectives& coll, const shm::SlotHeader& h) {
  if (t.rank() == 0) {
    const std::span<std::byte> ch = t.channel_bytes_to(1);
    std::memcpy(ch.data() + shm::kSlotsOffset, &h, sizeof h);  // slot 0
    const std::uint64_t written = 1;
    std::memcpy(ch.data(), &written, sizeof written);
  }
  coll.barrier(1);
  const std::string what = t.rank() == 1 ? corrupt_channel_error(t, static_cast<std::size_t>(h.bytes)) : "";
  coll.barrier(2);
  return what;
}

// A direct message's header, one long message at `data`, naming as its shared buffer the `bytes` there
// as descriptor `fd` with inode number `id`.
shm::SlotHeader naming_buffer(const void* data, std::size_t bytes, int fd, std::uint64_t id) {
  shm::SlotHeader h{kSmall.slot_bytes + 8, tags::kUser, shm::kDirect};
  h.address = reinterpret_cast<std::uintptr_t>(data);
  h.buffer_fd = fd;
  h.buffer_id = id;
  h.buffer_base = h.address;
  h.buffer_bytes = bytes;
  return h;
}

// A process of the host's user overwrites the counter of rank 0's channel to rank 1: rank 1 reports
// the corrupt channel as an integrity failure naming it, instead of reading slots nobody wrote.
TEST(ShmTransport, OverwrittenCounterIsAnIntegrityFailureNamingTheChannel) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  Collectives coll(mpi);  // the barrier goes around the channel about to be broken
  if (t.rank() == 0) {
    const std::span<std::byte> ch = t.channel_bytes_to(1);
    ASSERT_GE(ch.size(), sizeof(std::uint64_t));
    const std::uint64_t claim = 1000;  // `written`: far more messages than the channel's slots
    std::memcpy(ch.data(), &claim, sizeof claim);
  }
  coll.barrier(1);
  if (t.rank() == 1) corrupt_channel_error(t, 64);
  coll.barrier(2);
}

// A process of the host's user writes a long message's header into rank 0's channel to rank 1 that
// points at memory rank 0 never mapped: rank 1's direct read is refused by the kernel and reported as
// a corrupt channel, never as a message.
TEST(ShmTransport, DirectReadOfAForgedAddressIsAnIntegrityFailure) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  if (!t.direct_reads()) GTEST_SKIP() << "this host refuses process_vm_readv between the ranks";
  Collectives coll(mpi);
  const std::string what = forged_message_error(
      t, coll, {kSmall.slot_bytes + 8, tags::kUser, shm::kDirect, /*address=*/4096, /*ticket=*/0});
  if (t.rank() == 1) {
    EXPECT_NE(what.find("not readable"), std::string::npos) << what;
  }
}

// A writer into rank 0's channel to rank 1 names a real shared buffer of rank 0's by its descriptor
// but with another inode number: rank 1 must not take whatever that descriptor is for the buffer named,
// and reports a corrupt channel.
TEST(ShmTransport, ASharedBufferNamedWithTheWrongIdentityIsAnIntegrityFailure) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  if (!t.direct_reads()) GTEST_SKIP() << "this host refuses process_vm_readv between the ranks";
  Collectives coll(mpi);
  std::string error;
  auto shared = SharedBuffer::create(4096, error);
  ASSERT_TRUE(shared.has_value()) << error;
  const std::string what = forged_message_error(
      t, coll, naming_buffer(shared->data(), shared->size(), shared->fd(), shared->id() + 1));
  if (t.rank() == 1) {
    EXPECT_NE(what.find("is not the"), std::string::npos) << what;
  }
}

// The same with a descriptor of an ordinary file rank 0 holds open, named with that file's own inode
// number: only a shared buffer (a memfd) may be mapped, never another file of the sender's.
TEST(ShmTransport, AnOrdinaryFileNamedAsASharedBufferIsAnIntegrityFailure) {
  MpiTransport mpi;
  ShmTransport t(mpi, kSmall);
  if (!t.direct_reads()) GTEST_SKIP() << "this host refuses process_vm_readv between the ranks";
  Collectives coll(mpi);
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::tmpfile(), &std::fclose);
  ASSERT_NE(file, nullptr);
  const std::vector<std::byte> bytes(4096, std::byte{7});
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file.get()), bytes.size());
  std::fflush(file.get());
  struct stat st {};
  ASSERT_EQ(::fstat(::fileno(file.get()), &st), 0);
  const std::string what = forged_message_error(
      t, coll,
      naming_buffer(bytes.data(), bytes.size(), ::fileno(file.get()), static_cast<std::uint64_t>(st.st_ino)));
  if (t.rank() == 1) {
    EXPECT_NE(what.find("is not the"), std::string::npos) << what;
  }
}

// Headers as a writer into the shared memory could leave them: every one is either within what a
// sender of ours writes or refused, with a reason (the receiver then never copies past its slot).
TEST(ShmChannel, EveryHeaderIsWithinItsSlotOrRefused) {
  std::uint64_t x = 88172645463325252ULL;  // xorshift64: reproducible
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  constexpr std::size_t slot = 256;
  int refused = 0;
  for (int i = 0; i < 200000; ++i) {
    shm::SlotHeader h{next() % (i % 2 == 0 ? 1024 : UINT64_MAX), static_cast<std::int32_t>(next()),
                      i % 3 == 0 ? shm::kInline : static_cast<std::int32_t>(next() % 70000) - 2000};
    const auto bad = shm::slot_header_error(h, slot);
    if (bad) {
      ++refused;
      EXPECT_FALSE(bad->empty());
      continue;
    }
    if (h.payload_tag == shm::kInline) {
      EXPECT_LE(h.bytes, slot);
    } else {
      EXPECT_GT(h.bytes, slot);
      if (h.payload_tag != shm::kDirect) {
        EXPECT_GE(h.payload_tag, 0);
        EXPECT_LT(h.payload_tag, shm::kPayloadTags);
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(shm::slot_header_error({slot, 5, shm::kInline}, slot), std::nullopt);
  EXPECT_NE(shm::slot_header_error({slot + 1, 5, shm::kInline}, slot), std::nullopt);
  EXPECT_NE(shm::slot_header_error({slot, 5, 0}, slot), std::nullopt);  // fits a slot: never sent long
  EXPECT_NE(shm::slot_header_error({slot, 5, shm::kDirect}, slot), std::nullopt);
  EXPECT_EQ(shm::slot_header_error({slot + 1, 5, shm::kDirect}, slot), std::nullopt);
  EXPECT_NE(shm::slot_header_error({slot + 1, 5, -3}, slot), std::nullopt);
  // A shared buffer (Note [Shared buffers]) must hold the whole message and be named by a direct one.
  const auto in_buffer = [&](std::uint64_t bytes, std::int32_t payload_tag, int fd, std::uint64_t address) {
    shm::SlotHeader h{bytes, 5, payload_tag};
    h.address = address;
    h.buffer_fd = fd;
    h.buffer_id = 42;
    h.buffer_base = 1 << 20;
    h.buffer_bytes = 4096;
    return shm::slot_header_error(h, slot);
  };
  constexpr std::uint64_t base = 1 << 20;
  EXPECT_EQ(in_buffer(4096, shm::kDirect, 3, base), std::nullopt);
  EXPECT_EQ(in_buffer(slot + 1, shm::kDirect, 3, base + 4096 - (slot + 1)), std::nullopt);
  EXPECT_NE(in_buffer(slot + 1, shm::kDirect, 3, base + 4096 - slot), std::nullopt);  // runs past its end
  EXPECT_NE(in_buffer(4097, shm::kDirect, 3, base), std::nullopt);
  EXPECT_NE(in_buffer(slot + 1, shm::kDirect, 3, base - 1), std::nullopt);        // starts before it
  EXPECT_NE(in_buffer(slot + 1, shm::kDirect, 3, UINT64_MAX - 8), std::nullopt);  // wraps around
  EXPECT_NE(in_buffer(slot + 1, 7, 3, base), std::nullopt);                       // bytes through MPI
  EXPECT_NE(in_buffer(slot + 1, shm::kDirect, -1, base), std::nullopt);
  EXPECT_EQ(shm::written_error(10, 8, 2), std::nullopt);
  EXPECT_NE(shm::written_error(11, 8, 2), std::nullopt);
  EXPECT_NE(shm::written_error(7, 8, 2), std::nullopt);
  EXPECT_NE(shm::read_error(9, 8), std::nullopt);
  EXPECT_EQ(shm::read_error(8, 8), std::nullopt);
}

}  // namespace
}  // namespace tt::comm
