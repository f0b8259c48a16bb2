// Failure notices (comm/secure/first_failure.h) under forgery: Note [Notices never lower a verdict].
// Rank 1 plays a process that can reach MPI_COMM_WORLD and sends rank 0 notices no honest rank sends —
// a verdict with exit code 0 (the forgery that once turned a detected attack into a clean exit), one
// in another rank's name, a non-integrity verdict ahead of an integrity failure, messages of the
// wrong size (one of them more than 2 GiB) — before rank 0 settles its own failure. Rank 0 must keep
// its own finding, and refuse the wrong sizes unread.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "comm/secure/first_failure.h"
#include "tests/comm/mpi_test_env.h"

namespace tt::comm {
namespace {

using F = FailureNotices;

F::Notice forged(int rank, int code, bool verdict) {
  F::Notice n{};
  n[F::kNotIntegrity] = code == 3 ? 0 : 1;
  n[F::kRank] = static_cast<std::uint64_t>(rank);
  n[F::kCode] = static_cast<std::uint64_t>(code);
  n[F::kVerdict] = verdict ? 1 : 0;
  return n;
}

// The forger's messages, sent without waiting. Besides the notices, two of another size on the notices'
// tag: 32 KiB, and 4 GiB + 4 KiB (more bytes than MPI's int counts name; one 4 KiB block sent over and
// over, a send buffer may repeat itself). Note [Sizes before receives]: rank 0 refuses both unread, so
// their sends never complete; the forger frees them and keeps their buffers until the end.
struct Forgeries {
  std::vector<F::Wire> notices;
  std::vector<std::uint64_t> big = std::vector<std::uint64_t>(4096, 7);  // (4096,): 32 KiB
  std::vector<MPI_Request> sent;

  void send_all(int to, bool with_big = true) {
    for (const F::Wire& n : notices) {
      sent.emplace_back();
      MPI_Isend(n.data(), F::kWireWords, MPI_UINT64_T, to, F::kTag, MPI_COMM_WORLD, &sent.back());
    }
    if (!with_big) return;
    MPI_Request refused = MPI_REQUEST_NULL;
    MPI_Isend(big.data(), static_cast<int>(big.size()), MPI_UINT64_T, to, F::kTag, MPI_COMM_WORLD, &refused);
    MPI_Request_free(&refused);
    MPI_Datatype repeated = MPI_DATATYPE_NULL;  // (2^20 + 1) times the same 4 KiB of `big`
    MPI_Type_create_hvector((1 << 20) + 1, 4096, 0, MPI_BYTE, &repeated);
    MPI_Type_commit(&repeated);
    MPI_Isend(big.data(), 1, repeated, to, F::kTag, MPI_COMM_WORLD, &refused);
    MPI_Request_free(&refused);
    MPI_Type_free(&repeated);
  }
  void wait() { MPI_Waitall(static_cast<int>(sent.size()), sent.data(), MPI_STATUSES_IGNORE); }
};

// Every rank but 0 takes rank 0's two notices (its failure, then its verdict), so none is pending at
// the end; returns the verdict's exit code.
std::uint64_t drain_rank0() {
  F::Wire n{};
  for (int i = 0; i < 2; ++i)
    MPI_Recv(n.data(), F::kWireWords, MPI_UINT64_T, 0, F::kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  EXPECT_EQ(n[F::kVerdict], 1u);
  return n[F::kCode];
}

// Rank 0's failure notice and its verdict (`count` 2), or just its failure when another rank's verdict
// came first (1), taken off the wire so that no notice is pending when the next case starts.
void drain_rank0_notices(int count) {
  F::Wire n{};
  for (int i = 0; i < count; ++i)
    MPI_Recv(n.data(), F::kWireWords, MPI_UINT64_T, 0, F::kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

// Rank 0 settles `own` after rank 1's forgeries have arrived; returns what it settled on.
FirstFailure settle_after_forgeries(const std::exception& own, int code, bool non_integrity_verdict) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Forgeries forger;
  if (rank == 1) {
    forger.notices.push_back(F::seal(forged(1, 0, true), nullptr));  // "the verdict is success"
    forger.notices.push_back(F::seal(forged(0, 3, true), nullptr));  // in rank 0's own name, from rank 1
    if (non_integrity_verdict) forger.notices.push_back(F::seal(forged(1, 1, true), nullptr));
    forger.send_all(0);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every forgery is on its way before rank 0 listens
  FirstFailure f;
  F notices;  // rank 0's notices are read from it until every rank has them (the last barrier)
  if (rank == 0) {
    f = notices.settle(own, code, std::chrono::milliseconds(300));
    if (f.mine) notices.announce(std::chrono::milliseconds(0));
  } else {
    EXPECT_EQ(drain_rank0(), static_cast<std::uint64_t>(code));
  }
  if (rank == 1) forger.wait();
  MPI_Barrier(MPI_COMM_WORLD);
  return f;
}

TEST(FailureNotices, ForgedNoticesNeverLowerAnIntegrityVerdict) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2) GTEST_SKIP() << "needs a rank to forge notices";
  const FirstFailure f = settle_after_forgeries(IntegrityError("a sealed message failed to open"), 3, true);
  if (rank == 0) {
    EXPECT_TRUE(f.mine);  // none of the forgeries was taken for the first failure
    EXPECT_EQ(f.code, 3);
    EXPECT_TRUE(f.integrity);
  }
}

TEST(FailureNotices, ForgedNoticesNeverTurnAFailureIntoSuccess) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2) GTEST_SKIP() << "needs a rank to forge notices";
  const FirstFailure f = settle_after_forgeries(RunError("the peer stopped answering"), 1, false);
  if (rank == 0) {
    EXPECT_TRUE(f.mine);
    EXPECT_EQ(f.code, 1);
    EXPECT_FALSE(f.integrity);
  }
}

// Note [Sealed notices]: a tagged notice opens under its key only, with every field as sent.
TEST(FailureNotices, TaggedNoticesOpenUnderTheirKeyOnly) {
  const tee::NoticeKey key = tee::NoticeKey::random();
  const tee::NoticeKey other = tee::NoticeKey::random();
  const F::Notice n = forged(2, 3, true);
  ASSERT_TRUE(F::open(F::seal(n, &key), 2, &key).has_value());
  EXPECT_EQ(*F::open(F::seal(n, &key), 2, &key), n);
  EXPECT_FALSE(F::open(F::seal(n, nullptr), 2, &key).has_value());  // untagged, to an armed rank
  EXPECT_FALSE(F::open(F::seal(n, &other), 2, &key).has_value());   // another session's key
  F::Wire w = F::seal(n, &key);
  w[F::kCode] = 1;  // a field changed after tagging
  EXPECT_FALSE(F::open(w, 2, &key).has_value());
  EXPECT_FALSE(F::open(F::seal(n, &key), 1, &key).has_value());  // sent by a rank it does not name
  EXPECT_TRUE(
      F::open(F::seal(n, nullptr), 2, nullptr).has_value());  // unarmed: Note [Notices never lower...]
}

// Note [Notices name virtual ranks]: with K ranks a process, process p's notices name one of ranks
// p*K .. p*K+K-1; a notice naming a rank another process hosts is refused.
TEST(FailureNotices, AProcessOfVirtualRanksNamesOneOfItsRanks) {
  const F::Notice n = forged(3, 3, true);  // rank 3: process 1's second rank with 2 a process
  EXPECT_TRUE(F::open(F::seal(n, nullptr), 1, nullptr, 2).has_value());
  EXPECT_FALSE(F::open(F::seal(n, nullptr), 0, nullptr, 2).has_value());
  EXPECT_FALSE(F::open(F::seal(n, nullptr), 1, nullptr, 1).has_value());  // one rank a process: rank 1 only
  EXPECT_EQ(
      consequence_line("ranks 2-3", FirstFailure{.mine = false, .rank = 1, .code = 3, .integrity = true},
                       OwnFailure::kNone),
      "ranks 2-3: stopped: rank 1 detected an attack (its line is the verdict)");
}

// An armed rank (its session has keys) hears a verdict forged in clear by rank 1 — "rank 1 failed
// first" — while it settles a failure of its own: the forgery neither stops it nor names the
// failure; a verdict tagged under the session's key does.
TEST(FailureNotices, AnArmedRankIgnoresUntaggedVerdicts) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2) GTEST_SKIP() << "needs a rank to forge notices";
  // Every rank derives the same key (a session's group secret stands for it here: fixed bytes).
  const tee::NoticeKey key(tee::SecretBytes(std::vector<std::uint8_t>(32, 0x5a)));
  for (const bool tagged : {false, true}) {
    Forgeries forger;
    if (rank == 1) {
      forger.notices.push_back(F::seal(forged(1, 1, true), tagged ? &key : nullptr));
      forger.send_all(0, /*with_big=*/false);  // a tagged verdict ends rank 0's listening at once
    }
    MPI_Barrier(MPI_COMM_WORLD);
    F notices;
    notices.arm(key.clone());
    FirstFailure f;
    if (rank == 0)
      f = notices.settle(RunError("the peer stopped answering"), 1, std::chrono::milliseconds(300));
    if (rank == 1) forger.wait();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      EXPECT_EQ(f.mine, !tagged) << (tagged ? "tagged" : "untagged");
      EXPECT_EQ(f.rank, tagged ? 1 : 0);
      if (f.mine) notices.announce(std::chrono::milliseconds(0));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) drain_rank0_notices(tagged ? 1 : 2);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// What a rank that is not the verdict's prints says what it saw itself: nothing, a failure that
// followed from the verdict's (a stopped peer), or an attack it detected on its own (the same
// tampered input on every rank's disk), which must not be called a consequence.
TEST(FailureNotices, AConsequenceLineSaysWhatThisRankSaw) {
  const FirstFailure first{.mine = false, .rank = 0, .code = 3, .integrity = true};
  EXPECT_EQ(consequence_line(2, first, OwnFailure::kNone),
            "rank 2: stopped: rank 0 detected an attack (its line is the verdict)");
  EXPECT_EQ(consequence_line(2, first, OwnFailure::kFollowing),
            "rank 2: stopped: rank 0 detected an attack first (its line is the verdict); this rank's own "
            "failure followed from it");
  EXPECT_EQ(consequence_line(2, first, OwnFailure::kIntegrity),
            "rank 2: stopped: rank 0 detected an attack first (its line is the verdict); this rank detected "
            "an integrity failure too");
  const FirstFailure dead{.mine = false, .rank = 1, .code = 1, .integrity = false};
  EXPECT_EQ(consequence_line(0, dead, OwnFailure::kNone), "rank 0: stopped: rank 1 failed");
}

}  // namespace
}  // namespace tt::comm
