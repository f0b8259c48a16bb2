// engine/run/input_agreement: the record of what a rank opened, its wire format, the comparison across
// ranks (the first difference, named), the data owner's pins, and the collective on in-process
// ranks, where every rank must refuse alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "comm/channel.h"
#include "engine/run/dist_context.h"
#include "engine/run/input_agreement.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/identity/attestation.h"
#include "tee/identity/vendor.h"
#include "tee/identity/x509.h"
#include "tests/common/fuzz.h"
#include "tests/common/inproc_transport.h"
#include "tests/common/temp_dir.h"

namespace tt {
namespace {

const std::string kManifestA(64, 'a');
const std::string kManifestB = "cd34" + std::string(60, 'b');
const std::string kId(32, '1');

// What an honest rank of a sealed, resumed two-split run records.
InputRecord honest() {
  InputRecord r;
  add_configuration(r, "{\"steps\": 10}");
  r.add(InputKind::TrustRoot, "", {std::string(64, 'e')});
  r.add(InputKind::RevocationList, "", {"none", "none"});
  r.add(InputKind::Key, "dataset key", {"0123456789abcdef"});
  r.add(InputKind::DatasetSplit, "val", {kManifestA, kId, "in the manifest", "500"});
  r.add(InputKind::DatasetSplit, "train", {kManifestA, kId, "in the manifest", "9000"});
  r.add(InputKind::Checkpoint, "", {std::string(32, '7'), "4", std::string(64, '9')});
  add_setting(r, Setting::Resume, "given");
  add_setting(r, Setting::DataAtRest, "sealed");
  return r;
}

std::string as_string(const std::vector<std::byte>& b) {
  std::string s(b.size(), '\0');
  for (std::size_t i = 0; i < b.size(); ++i) s[i] = static_cast<char>(b[i]);
  return s;
}
std::vector<std::byte> as_bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
  return b;
}

TEST(InputAgreement, RecordsAreCanonicalAndRoundTrip) {
  const InputRecord r = honest();
  ASSERT_EQ(r.inputs().size(), 9u);
  EXPECT_EQ(r.inputs()[4].name, "train");  // ordered by kind, then name, whatever the order added
  const std::vector<std::byte> wire = r.encode();
  EXPECT_EQ(as_string(wire).substr(0, 8), std::string("TTAGREE\x02", 8));
  const InputRecord back = InputRecord::decode(wire, "rank 0's input record");
  EXPECT_EQ(back.encode(), wire);
  EXPECT_EQ(first_difference({r, back}).rank, -1);
  InputRecord again = honest();
  again.add(InputKind::DatasetSplit, "train",
            {kManifestA, kId, "in the manifest", "9000"});  // replaces, never repeats
  EXPECT_EQ(again.encode(), wire);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["dataset"]["train"]["manifest_sha256"], kManifestA);
  EXPECT_EQ(j["checkpoint"]["step"], "4");
  EXPECT_EQ(j["keys"]["dataset key"]["fingerprint"], "0123456789abcdef");
  EXPECT_EQ(j["settings"]["--resume"]["value"], "given");
  EXPECT_NE(r.describe().find("dataset split train: manifest sha256 aaaaaaaaaaaaaaaa..., dataset id "
                              "1111111111111111..., content sha256 in the manifest, size 9000"),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.describe().find("data at rest: value sealed"), std::string::npos) << r.describe();
}

// A policy agrees by what it accepts, not how its file is laid out; none at all is "own".
TEST(InputAgreement, PoliciesAgreeByMeaning) {
  tee::VerifierPolicy a, b;
  a.binaries = {tee::sha256("x"), tee::sha256("y")};
  a.configs = {tee::sha256("c")};
  b.configs = a.configs;
  b.binaries = {a.binaries[1], a.binaries[0]};
  InputRecord ra, rb, own;
  add_policy(ra, a);
  add_policy(rb, b);
  add_policy(own, {});
  EXPECT_EQ(ra.encode(), rb.encode());
  EXPECT_EQ(own.find(InputKind::VerifierPolicy)->values[0], "own");
  b.binaries.pop_back();
  add_policy(rb, b);
  EXPECT_NE(
      first_difference({ra, rb}).message.find("rank 1's verifier policy differs from rank 0's (sha256 "),
      std::string::npos);
}

TEST(InputAgreement, AddRefusesWhatDoesNotFitTheKind) {
  InputRecord r;
  EXPECT_THROW(r.add(InputKind::Checkpoint, "", {"only one"}), InputError);
  EXPECT_THROW(r.add(InputKind::DatasetSplit, "", {kManifestA, kId, "in the manifest", "1"}),
               InputError);                                           // named
  EXPECT_THROW(r.add(InputKind::TrustRoot, "x", {"a"}), InputError);  // the root is not
  EXPECT_THROW(r.add(InputKind::Key, "bad\nname", {"a"}), InputError);
  EXPECT_THROW(r.add(InputKind::TrustRoot, "", {std::string(kMaxAgreedString + 1, 'a')}), InputError);
}

// Note [The odd rank out]: rank 0 alone holds another trust root; the line names rank 0, not rank 1.
TEST(InputAgreement, NamesRankZeroWhenItAloneDiffers) {
  InputRecord root = honest();
  root.add(InputKind::TrustRoot, "", {std::string(64, 'f')});
  InputDifference d = first_difference({root, honest(), honest(), honest()});
  EXPECT_EQ(d.rank, 0);
  EXPECT_EQ(d.message.rfind("rank 0's trust root differs from rank 1's (sha256 ffffffffffffffff... vs ", 0),
            0U)
      << d.message;
  EXPECT_NE(d.message.find(", as every other rank has it"), std::string::npos) << d.message;
  EXPECT_EQ(first_difference({root, honest()}).rank, 1);  // two ranks: nothing says which is odd
  InputRecord other = honest();
  other.add(InputKind::TrustRoot, "", {std::string(64, 'd')});
  EXPECT_EQ(first_difference({root, honest(), other}).rank, 1);  // no majority: rank 0's view stands
}

TEST(InputAgreement, NamesTheRankAndTheInputThatDiffer) {
  InputRecord other = honest();
  other.add(InputKind::DatasetSplit, "train", {kManifestB, kId, "in the manifest", "9000"});
  InputDifference d = first_difference({honest(), honest(), other});
  EXPECT_EQ(d.rank, 2);
  EXPECT_FALSE(d.configuration);
  EXPECT_EQ(d.message,
            "rank 2's dataset split train differs from rank 0's (manifest sha256 cd34bbbbbbbbbbbb... vs "
            "aaaaaaaaaaaaaaaa...)");

  InputRecord lineage = honest();
  lineage.add(InputKind::Checkpoint, "", {std::string(32, '8'), "4", std::string(64, '9')});
  d = first_difference({honest(), lineage});
  EXPECT_EQ(d.message,
            "rank 1's checkpoint differs from rank 0's (lineage 8888888888888888... vs 7777777777777777...)");

  InputRecord list = honest();
  list.add(InputKind::RevocationList, "", {"1", std::string(64, '1')});
  InputRecord newer = honest();
  newer.add(InputKind::RevocationList, "", {"2", std::string(64, '2')});
  EXPECT_EQ(first_difference({newer, newer, list}).message,
            "rank 2's revocation list differs from rank 0's (number 1 vs 2)");

  InputRecord root = honest();
  root.add(InputKind::TrustRoot, "", {std::string(64, 'f')});
  EXPECT_NE(first_difference({honest(), root}).message.find("rank 1's trust root differs from rank 0's"),
            std::string::npos);

  InputRecord key = honest();
  key.add(InputKind::Key, "dataset key", {"fedcba9876543210"});
  EXPECT_EQ(first_difference({honest(), key}).message,
            "rank 1's dataset key differs from rank 0's (fingerprint fedcba9876543210 vs 0123456789abcdef)");
}

// What a run records of its trust anchor: the root's digest, and the list's number before its digest,
// so that a rank given an older genuine list is named by the number.
TEST(InputAgreement, TheRevocationListIsRecordedByNumberAndDigest) {
  tt::testing::TempDir dir;
  tee::ProvisionOptions o;
  o.dir = dir.path();
  tee::provision(o);
  const auto anchor = [&] {
    const auto root = tee::vendor_root_path(dir.path());
    return tee::TrustAnchor::load(root, tee::TrustAnchor::crl_beside(root));
  };
  InputRecord older, newer;
  add_trust(older, anchor());
  o.renew_crl = true;
  tee::provision(o);
  add_trust(newer, anchor());
  const AgreedInput* list = newer.find(InputKind::RevocationList);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->values[0], "2");
  EXPECT_EQ(list->values[1], tee::to_hex(tee::sha256(anchor().crl_der())));
  EXPECT_EQ(first_difference({newer, newer, newer, older}).message,
            "rank 3's revocation list differs from rank 0's (number 1 vs 2)");
  EXPECT_EQ(newer.to_json()["revocation_list"]["number"], "2");
}

TEST(InputAgreement, AnInputOnlyOneRankHasIsADifference) {
  InputRecord fresh;  // rank 1 started fresh where rank 0 resumed
  const InputRecord resumed = honest();
  for (const AgreedInput& in : resumed.inputs())
    if (in.kind != InputKind::Checkpoint) fresh.add(in.kind, in.name, in.values);
  EXPECT_EQ(first_difference({honest(), fresh}).message,
            "rank 1's checkpoint differs from rank 0's (only rank 0 has one: lineage 7777777777777777...)");
  EXPECT_EQ(first_difference({fresh, honest()}).message,
            "rank 1's checkpoint differs from rank 0's (only rank 1 has one: lineage 7777777777777777...)");
}

// Real attestation's collateral joins by each file's digest, named by its kind (Note [Collateral in the
// agreed inputs]): another TCB info on one rank is an integrity failure naming it, not a launch mistake,
// whatever the files' paths.
TEST(InputAgreement, CollateralAgreesByEachFilesDigest) {
  const auto with = [](const std::string& tcb_info, const std::string& path) {
    InputRecord r = honest();
    add_real_attestation(
        r, {.test_roots = false,
            .policy_digest = "",
            .crls = 1,
            .collateral = {{.kind = "TCB info", .file = path, .sha256 = tcb_info},
                           {.kind = "evidence CRL 1", .file = "crl.pem", .sha256 = std::string(64, 'c')}}});
    return r;
  };
  const std::string a(64, 'a'), b = "bb12" + std::string(60, 'b');
  EXPECT_EQ(first_difference({with(a, "/r0/tcb.json"), with(a, "/r1/other.json")}).rank, -1);
  const InputDifference d = first_difference({with(a, "tcb.json"), with(b, "tcb.json")});
  EXPECT_EQ(d.message,
            "rank 1's collateral TCB info differs from rank 0's (sha256 bb12bbbbbbbbbbbb... vs "
            "aaaaaaaaaaaaaaaa...)");
  EXPECT_FALSE(d.configuration);
  const InputRecord decoded = InputRecord::decode(with(a, "t").encode(), "rank 1's input record");
  ASSERT_NE(decoded.find(InputKind::Collateral, "evidence CRL 1"), nullptr);
  EXPECT_EQ(decoded.to_json()["collateral"]["TCB info"]["sha256"], a);
}

// Plain splits have no manifest: they agree by the SHA-256 of what each rank read, so a same-size
// shard of other tokens is a difference.
TEST(InputAgreement, PlainSplitsAgreeByContent) {
  InputRecord a, b;
  a.add(InputKind::DatasetSplit, "train", {"none", "plain", kManifestA, "9000"});
  b.add(InputKind::DatasetSplit, "train", {"none", "plain", kManifestB, "9000"});
  const InputDifference d = first_difference({a, b});
  EXPECT_FALSE(d.configuration);
  EXPECT_EQ(d.message,
            "rank 1's dataset split train differs from rank 0's (content sha256 cd34bbbbbbbbbbbb... vs "
            "aaaaaaaaaaaaaaaa...)");
}

// What a rank was told or found on its own host, outside the configuration, is named by its flag; a
// difference is an integrity failure, not a launch mistake. Words print whole, digests shortened.
TEST(InputAgreement, SettingsThatDifferAreNamed) {
  auto with = [](Setting s, const std::string& v) {
    InputRecord r = honest();
    add_setting(r, s, v);
    return first_difference({honest(), r});
  };
  InputDifference d = with(Setting::Resume, "none");
  EXPECT_FALSE(d.configuration);
  EXPECT_EQ(d.message, "rank 1's --resume differs from rank 0's (value none vs given)");
  EXPECT_EQ(with(Setting::DataAtRest, "plain").message,
            "rank 1's data at rest differs from rank 0's (value plain vs sealed)");
  InputRecord snoop = honest(), none = honest();
  add_setting(snoop, Setting::Adversary, "snoop");
  add_setting(none, Setting::Adversary, "none");
  EXPECT_EQ(first_difference({none, snoop}).message,
            "rank 1's --adversary differs from rank 0's (value snoop vs none)");
  InputRecord one = honest(), two = honest();
  add_setting(one, Setting::Threads, "1");
  add_setting(two, Setting::Threads, "2");
  EXPECT_EQ(first_difference({one, two, one}).message,
            "rank 1's --threads differs from rank 0's (value 2 vs 1)");
  const std::string zen = "cpu: OpenBLAS 0.3.21 DYNAMIC_ARCH Zen MAX_THREADS=64, core Zen, conv oneDNN 2.6.3";
  InputRecord k0 = honest(), k1 = honest();
  add_setting(k0, Setting::Backend, zen);
  add_setting(k1, Setting::Backend, "cpu: OpenBLAS 0.3.21, core Haswell, conv im2col+sgemm");
  EXPECT_EQ(first_difference({k0, k1}).message,
            "rank 1's backend differs from rank 0's (value cpu: OpenBLAS "
            "0.3.21, core Haswell, conv im2col+sgemm vs " +
                zen + ")");
  // A value that does not fit a record is agreed by its digest.
  InputRecord odd;
  add_setting(odd, Setting::Backend, std::string(kMaxAgreedString + 1, 'k'));
  EXPECT_EQ(odd.find(InputKind::Setting, "backend")->values[0],
            "sha256 " + tee::to_hex(tee::sha256(std::string(kMaxAgreedString + 1, 'k'))));
}

TEST(InputAgreement, ADifferentConfigurationIsALaunchMistake) {
  InputRecord other = honest();
  add_configuration(other, "{\"steps\": 11}");
  other.add(InputKind::DatasetSplit, "train", {kManifestB, kId, "in the manifest", "9000"});
  const InputDifference d = first_difference({honest(), other});
  EXPECT_TRUE(d.configuration);  // the configuration comes first in the record's order
  EXPECT_NE(d.message.find("rank 1's configuration differs from rank 0's"), std::string::npos);
  EXPECT_NE(d.message.find("start every rank with the same flags"), std::string::npos);
}

TEST(InputAgreement, PinsNameWhatWasExpectedAndFound) {
  const InputRecord r = honest();
  EXPECT_EQ(unmet_expectation(r, {}), "");
  EXPECT_EQ(unmet_expectation(r, {kManifestA, std::string(64, '9')}), "");
  std::string upper(64, 'A');
  EXPECT_EQ(unmet_expectation(r, {upper, ""}), "");  // hex in either case
  EXPECT_EQ(
      unmet_expectation(r, {kManifestB, ""}),
      "--expect-dataset: dataset split train has manifest sha256 " + kManifestA + ", expected " + kManifestB);
  EXPECT_EQ(unmet_expectation(r, {"", kManifestB}),
            "--expect-checkpoint: the checkpoint resumed (step 4) has "
            "manifest sha256 " +
                std::string(64, '9') + ", expected " + kManifestB);
  InputRecord plain;
  plain.add(InputKind::DatasetSplit, "train", {"none", "plain", std::string(64, 'c'), "10"});
  EXPECT_NE(unmet_expectation(plain, {kManifestA, ""}).find("manifest sha256 none (plain data)"),
            std::string::npos);
  EXPECT_NE(unmet_expectation(plain, {"", kManifestA}).find("resumed no checkpoint"), std::string::npos);
}

TEST(InputAgreement, DecodeRefusesWhatIsNotTheFormat) {
  const std::string wire = as_string(honest().encode());
  auto refused = [](const std::string& bytes, const std::string& why) {
    try {
      (void)InputRecord::decode(as_bytes(bytes), "rank 1's input record");
      ADD_FAILURE() << "accepted: " << why;
    } catch (const IntegrityError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 1's input record is malformed"), std::string::npos)
          << e.what();
    }
  };
  refused("", "empty");
  refused("TTAGREE\x01" + wire.substr(8), "version 1");
  refused(wire + "x", "trailing byte");
  refused(wire.substr(0, wire.size() - 1), "truncated");
  // Two inputs swapped (out of order), and one repeated.
  InputRecord one, two;
  one.add(InputKind::TrustRoot, "", {"a"});
  two.add(InputKind::Configuration, "", {"b"});
  const std::string a = as_string(one.encode()).substr(10), b = as_string(two.encode()).substr(10);
  refused(std::string("TTAGREE\x02\x00\x02", 10) + a + b, "out of order");
  refused(std::string("TTAGREE\x02\x00\x02", 10) + b + b, "repeated");
  refused(std::string("TTAGREE\x02\x00\x01", 10) + "\x0a" + b.substr(1), "unknown kind");
  std::string ctl = std::string("TTAGREE\x02\x00\x01", 10) + b;
  ctl.back() = '\x07';
  refused(ctl, "a control character");
  std::string fields = std::string("TTAGREE\x02\x00\x01", 10) + b;
  fields[13] = '\x02';  // kind, name length (2), field count
  refused(fields, "two fields for a one-field kind");
}

// Every way of damaging a valid record ends in success or IntegrityError, never a crash or another
// exception; what decodes re-encodes to the same bytes (the format is canonical).
TEST(InputAgreementFuzz, DecodeSurvivesDamagedRecords) {
  const std::string valid = as_string(honest().encode());
  int accepted = 0, refused = 0;
  for (const auto& in : tt::testing::fuzz_inputs(valid, {})) {
    const int rc = tt::testing::run_parser(
        [&] {
          const InputRecord r = InputRecord::decode(as_bytes(in.bytes), "rank 1's input record");
          EXPECT_EQ(as_string(r.encode()), in.bytes) << in.what;
        },
        in.what);
    EXPECT_TRUE(rc == 0 || rc == 3) << in.what << ": exit " << rc;
    (rc == 0 ? accepted : refused)++;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // bit flips inside a value still decode (and then differ from rank 0's)
}

// The collective on three in-process ranks: records of different sizes travel, an honest world
// agrees, and a rank that opened another dataset makes EVERY rank refuse with the same line.
TEST(InputAgreement, EveryRankRefusesAlike) {
  for (const bool attack : {false, true}) {
    comm::InprocWorld world(3);
    std::vector<std::string> errors(3);
    std::vector<nlohmann::json> agreed(3);
    const auto ex = world.run([&](comm::Transport& t) {
      comm::PlainChannel channel;
      DistContext dist(t, channel, nullptr);
      InputRecord mine = honest();
      if (attack && t.rank() == 1)
        mine.add(InputKind::DatasetSplit, "train", {kManifestB, kId, "in the manifest", "123456789"});
      try {
        agreed[static_cast<std::size_t>(t.rank())] = agree_inputs(dist, mine).to_json();
      } catch (const IntegrityError& e) {
        errors[static_cast<std::size_t>(t.rank())] = e.what();
      }
    });
    for (const auto& e : ex) EXPECT_FALSE(e);
    for (int r = 0; r < 3; ++r) {
      if (attack) {
        EXPECT_EQ(
            errors[static_cast<std::size_t>(r)],
            "rank 1's dataset split train differs from rank 0's (manifest sha256 cd34bbbbbbbbbbbb... vs "
            "aaaaaaaaaaaaaaaa...)");
      } else {
        EXPECT_EQ(errors[static_cast<std::size_t>(r)], "");
        EXPECT_EQ(agreed[static_cast<std::size_t>(r)], honest().to_json());
      }
    }
  }
}

}  // namespace
}  // namespace tt
