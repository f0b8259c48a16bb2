// engine/keys/attestation_record: every rank's verified measurements (Note [Attestation record]) —
// the table an honest world builds, the refusals of a rank that lowers a verdict or reports what the
// others cannot reconcile, the wire form of one rank's entries (untrusted bytes from a peer), and
// their exchange on in-process ranks (agree_attestation_record), where every rank must refuse alike.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/channel.h"
#include "engine/keys/attestation_record.h"
#include "engine/run/dist_context.h"
#include "engine/run/input_agreement.h"
#include "tests/common/fuzz.h"
#include "tests/common/inproc_transport.h"

namespace tt {
namespace {

std::string measured(int rank) {
  return "tdx.mrtd " + std::string(16, static_cast<char>('a' + rank)) + "..., tdx.debug off";
}

// What rank v of an honest world of p ranks reports: each ring neighbour, verified "ok".
std::vector<VerifiedEntry> honest_entries(int v, int p) {
  std::vector<VerifiedEntry> out;
  for (const int s : {(v + 1) % p, (v + p - 1) % p}) {
    if (!out.empty() && out.front().subject == s) break;  // P = 2: one neighbour
    out.push_back({.verifier = v,
                   .subject = s,
                   .kind = "tdx+gpu",
                   .verdict = "ok",
                   .roots = "test roots",
                   .not_checked = "TCB collateral NOT checked",
                   .measurements = measured(s)});
  }
  return out;
}

std::vector<std::vector<VerifiedEntry>> honest_world(int p) {
  std::vector<std::vector<VerifiedEntry>> by_rank;
  for (int v = 0; v < p; ++v) by_rank.push_back(honest_entries(v, p));
  return by_rank;
}

void expect_refused(const std::vector<std::vector<VerifiedEntry>>& by_rank, const std::string& words) {
  try {
    reconcile(by_rank, "tdx+gpu");
    ADD_FAILURE() << "accepted; expected a refusal naming: " << words;
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(AttestationRecord, HonestWorldListsEveryRankWithItsVerifiers) {
  for (const int p : {2, 3, 4}) {
    const AttestationRecord record = reconcile(honest_world(p), "tdx+gpu");
    ASSERT_EQ(record.ranks.size(), static_cast<std::size_t>(p));
    for (int s = 0; s < p; ++s) {
      const RankMeasurements& m = record.ranks[static_cast<std::size_t>(s)];
      EXPECT_EQ(m.rank, s);
      EXPECT_EQ(m.measurements, measured(s));
      std::vector<int> verifiers;
      for (const VerifiedEntry& e : m.verified_by) verifiers.push_back(e.verifier);
      const std::vector<int> expected =
          p == 2 ? std::vector<int>{1 - s}
                 : (s == 0 ? std::vector<int>{1, p - 1}
                           : (s == p - 1 ? std::vector<int>{0, p - 2} : std::vector<int>{s - 1, s + 1}));
      EXPECT_EQ(verifiers, expected) << "P = " << p << ", rank " << s;
    }
    EXPECT_EQ(record.sha256.size(), 64u);
    const nlohmann::json j = record.to_json();
    EXPECT_EQ(j.size(), static_cast<std::size_t>(p));
    EXPECT_EQ(j[0]["verified_by"][0]["roots"], "test roots");
  }
}

// The digest is the table's: the same world gives the same digest, another measurement another one.
TEST(AttestationRecord, DigestCoversTheMeasurements) {
  auto world = honest_world(4);
  const std::string digest = reconcile(world, "tdx+gpu").sha256;
  EXPECT_EQ(reconcile(honest_world(4), "tdx+gpu").sha256, digest);
  for (auto& entries : world)
    for (VerifiedEntry& e : entries)
      if (e.subject == 2) e.measurements = "tdx.mrtd 0000000000000000..., tdx.debug off";
  EXPECT_NE(reconcile(world, "tdx+gpu").sha256, digest);
}

TEST(AttestationRecord, ARankCannotLowerAVerdict) {
  auto world = honest_world(4);
  world[1][0].verdict = "refused: off policy";
  expect_refused(world, "attestation record: rank 1 reports rank 2 refused (refused: off policy)");
}

TEST(AttestationRecord, NeighboursMustHaveSeenTheSameMeasurements) {
  auto world = honest_world(4);
  world[3][1].measurements = measured(0);  // rank 3 claims rank 2 runs rank 0's TD
  expect_refused(world, "rank 2's measurements as rank 1 verified them (" + measured(2) +
                            ") differ from those rank 3 verified (" + measured(0) + ")");
}

TEST(AttestationRecord, EachRankReportsExactlyItsNeighboursUnderTheAgreedKind) {
  auto far = honest_world(4);
  far[0][0].subject = 2;
  expect_refused(far, "rank 0 reports rank 2, which is not its ring neighbour");
  auto twice = honest_world(4);
  twice[0][1].subject = 1;
  expect_refused(twice, "rank 0 reports rank 1 twice");
  auto missing = honest_world(4);
  missing[2].pop_back();
  expect_refused(missing, "rank 2 reports no verdict on its neighbour rank 1");
  auto kind = honest_world(2);
  kind[1][0].kind = "snp";
  expect_refused(kind, "rank 1 reports rank 0's evidence as snp where tdx+gpu was agreed");
}

std::string as_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}
std::span<const std::byte> as_bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

TEST(AttestationRecord, EntriesTravelWholeAndOnlyAsTheirSendersOwn) {
  const std::vector<VerifiedEntry> mine = honest_entries(1, 4);
  const std::string wire = as_string(encode_entries(mine));
  const std::vector<VerifiedEntry> back = decode_entries(as_bytes(wire), 1);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].subject, mine[1].subject);
  EXPECT_EQ(back[1].measurements, mine[1].measurements);
  EXPECT_EQ(back[0].not_checked, mine[0].not_checked);
  try {
    decode_entries(as_bytes(wire), 2);  // rank 2 sending rank 1's verdicts as its own
    ADD_FAILURE() << "another rank's entries accepted";
  } catch (const IntegrityError& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 2's verified evidence is malformed (an entry of another verifier)"),
        std::string::npos)
        << e.what();
  }
}

// Every way of damaging a rank's entries ends in success or IntegrityError, never a crash or another
// exception; what decodes re-encodes to the same bytes (the form is canonical).
TEST(AttestationRecordFuzz, DecodeSurvivesDamagedEntries) {
  const std::string valid = as_string(encode_entries(honest_entries(1, 4)));
  int accepted = 0, refused = 0;
  for (const auto& in : tt::testing::fuzz_inputs(valid, {})) {
    const int rc = tt::testing::run_parser(
        [&] {
          EXPECT_EQ(as_string(encode_entries(decode_entries(as_bytes(in.bytes), 1))), in.bytes) << in.what;
        },
        in.what);
    EXPECT_TRUE(rc == 0 || rc == 3) << in.what << ": exit " << rc;
    (rc == 0 ? accepted : refused)++;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);
}

// A verifier that checked the roots and a policy but not revocation or the TCB collateral.
class LineVerifier final : public comm::RealEvidenceVerifier {
 public:
  comm::RealVerdict verify(const comm::RealAttestationKind&, const comm::RealEvidence&,
                           const tee::Sha256Digest&) const override {
    return {.ok = true, .reason = "ok", .measurements = ""};
  }
  std::string describe() const override {
    return "TEST ROOTS (--allow-test-roots: no vendor vouches for this evidence); policy 3f2a9c1e0b7d4a55; "
           "revocation NOT checked (no --evidence-crl); TCB collateral NOT checked; "
           "GPU RIMs: not checked (no --gpu-rims)";
  }
  comm::RealVerifierFacts facts() const override {
    return {.test_roots = true, .policy_digest = std::string(64, '3'), .crls = 0, .collateral = {}};
  }
};

TEST(AttestationRecord, OwnEntriesNameTheRootsAndWhatWasNotChecked) {
  const comm::RealAttestation real{.kind = comm::kRealAttestationKinds[2],
                                   .prover = nullptr,
                                   .verifier = std::make_shared<LineVerifier>()};
  const std::vector<VerifiedEntry> mine = own_entries(0, real, {{.rank = 1, .measurements = measured(1)}});
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].kind, "tdx+gpu");
  EXPECT_EQ(mine[0].verdict, "ok");
  EXPECT_EQ(mine[0].roots, "test roots");
  EXPECT_EQ(mine[0].not_checked,
            "revocation NOT checked (no --evidence-crl); TCB collateral NOT checked; "
            "GPU RIMs: not checked (no --gpu-rims)");
  EXPECT_EQ(mine[0].measurements, measured(1));
}

// Three in-process ranks exchange their entries: an honest world holds one table (one digest) on
// every rank; a rank that reports its neighbour refused makes EVERY rank refuse with the same line.
TEST(AttestationRecord, EveryRankHoldsTheTableOrRefusesAlike) {
  for (const bool lying : {false, true}) {
    comm::InprocWorld world(3);
    std::vector<std::string> errors(3), digests(3);
    const auto ex = world.run([&](comm::Transport& t) {
      comm::PlainChannel channel;
      DistContext dist(t, channel, nullptr);
      std::vector<VerifiedEntry> mine = honest_entries(t.rank(), 3);
      if (lying && t.rank() == 1) mine[0].verdict = "refused: off policy";
      const auto r = static_cast<std::size_t>(t.rank());
      try {
        digests[r] = agree_attestation_record(dist, mine, "tdx+gpu").sha256;
      } catch (const IntegrityError& e) {
        errors[r] = e.what();
      }
    });
    for (const auto& e : ex) EXPECT_FALSE(e);
    for (std::size_t r = 0; r < 3; ++r) {
      if (lying) {
        EXPECT_EQ(errors[r], "attestation record: rank 1 reports rank 2 refused (refused: off policy)");
      } else {
        EXPECT_EQ(errors[r], "");
        EXPECT_EQ(digests[r], reconcile(honest_world(3), "tdx+gpu").sha256);
      }
    }
  }
}

}  // namespace
}  // namespace tt
