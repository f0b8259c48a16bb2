// The attested handshake over the in-process transport: with certified identities, keys agree for
// P = 1..4 and drive a sealed ring; a man in the middle (uncertified key, another vendor's genuine
// certificate, a revoked device, replayed evidence) is refused on EVERY rank and receives no key; a
// binary or configuration outside the policy, a bad signature, a tampered group key or an oversized
// handshake message refuses on every rank naming the culprit; evidence files round-trip for
// `teetrain attest`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/ring_allreduce.h"
#include "comm/secure/attest_evidence.h"
#include "comm/secure/secure_session.h"
#include "tee/identity/vendor.h"
#include "tests/comm/comm_test_util.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string message_of(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

// A vendor with 5 devices (device 4 revoked), a second vendor, and a small stand-in for the binary
// (measuring the real test executable on every rank is slow).
class Lab {
 public:
  Lab()
      : path_(fs::temp_directory_path() / ("tt_secure_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(path_);
    std::ofstream(path_ / "binary") << "pretend this is teetrain";
    tee::provision({path_ / "vendor", 5, {4}});
    tee::provision({path_ / "other_vendor", 1, {}});
    anchor_ = load_trust_anchor(tee::vendor_root_path(path_ / "vendor"));
  }
  ~Lab() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Lab(const Lab&) = delete;
  Lab& operator=(const Lab&) = delete;
  const fs::path& path() const { return path_; }

  std::shared_ptr<const tee::DeviceIdentity> device(int i, const std::string& vendor = "vendor") const {
    return load_identity(tee::device_identity_path(path_ / vendor, i));
  }
  // Rank r's configuration: device r of the vendor, trusting the vendor's root.
  AttestConfig config(int rank) const {
    AttestConfig c;
    c.binary = path_ / "binary";
    c.run_config = "model=gpt2-tiny tee=fast cipher=aes-256-gcm";
    c.anchor = anchor_;
    c.identity = device(rank);
    return c;
  }

 private:
  fs::path path_;
  std::shared_ptr<const tee::TrustAnchor> anchor_;
};

// A rank that lies in the handshake (comm::EvidenceSource): claims `claim` instead of what it runs,
// and/or flips the last signature byte of the evidence it sends. The honest parts are MeasuredEvidence's.
class LyingEvidence final : public EvidenceSource {
 public:
  std::optional<tee::Measurements> claim;
  bool corrupt_signature = false;

  tee::Measurements measurements(const AttestConfig& config) const override {
    return claim ? *claim : honest_.measurements(config);
  }
  std::vector<std::uint8_t> wire_bytes(const tee::Evidence& evidence) const override {
    std::vector<std::uint8_t> bytes = honest_.wire_bytes(evidence);
    if (corrupt_signature) bytes.back() ^= 0x01;
    return bytes;
  }

 private:
  MeasuredEvidence honest_;
};

// Runs establish_keys on every rank; `tweak` adjusts one rank's config, `wrap` may put a transport
// decorator (an adversary) between the rank and the wire, `liar` (if set) is rank `liar_rank`'s evidence.
struct Result {
  std::vector<std::exception_ptr> errors;
  std::vector<SessionKeys> keys;
};
using Wrap = std::function<std::unique_ptr<Transport>(Transport&)>;
Result handshake(int p, const Lab& lab, const std::function<void(int, AttestConfig&)>& tweak = {},
                 FaultPlan faults = {}, const Wrap& wrap = {}, const LyingEvidence* liar = nullptr,
                 int liar_rank = -1) {
  InprocWorld world(p, std::move(faults), 5000ms);
  Result res;
  res.keys.resize(static_cast<std::size_t>(p));
  res.errors = world.run([&](Transport& t) {
    AttestConfig cfg = lab.config(t.rank());
    if (tweak) tweak(t.rank(), cfg);
    std::unique_ptr<Transport> wrapped = wrap ? wrap(t) : nullptr;
    const MeasuredEvidence honest;
    const EvidenceSource& source =
        liar != nullptr && t.rank() == liar_rank ? static_cast<const EvidenceSource&>(*liar) : honest;
    res.keys[static_cast<std::size_t>(t.rank())] = establish_keys(wrapped ? *wrapped : t, cfg, source);
  });
  return res;
}

void expect_refused_everywhere(const Result& r, const std::string& text) {
  for (std::size_t i = 0; i < r.errors.size(); ++i) {
    ASSERT_TRUE(r.errors[i]) << "rank " << i << " did not refuse";
    try {
      std::rethrow_exception(r.errors[i]);
    } catch (const AttestationError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << "rank " << i << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << i << " refused with the wrong error: " << e.what();
    }
  }
}

TEST(SecureSession, KeysAgreeAndDriveASealedRing) {
  Lab lab;
  for (int p = 1; p <= 4; ++p) {
    InprocWorld world(p);
    std::mutex mu;
    std::vector<std::string> next_fp(static_cast<std::size_t>(p)), prev_fp(static_cast<std::size_t>(p)),
        group_fp(static_cast<std::size_t>(p)), dataset_fp(static_cast<std::size_t>(p));
    std::vector<std::array<std::uint8_t, 16>> run_ids(static_cast<std::size_t>(p));
    const auto errors = world.run([&](Transport& t) {
      SessionKeys keys = establish_keys(t, lab.config(t.rank()));
      const auto dataset = t.rank() == 0 ? tee::SecretBytes::random(32) : tee::SecretBytes();
      const auto released = release_secret(t, keys, t.rank() == 0 ? &dataset : nullptr, 32, "dataset key");
      {
        std::lock_guard lk(mu);
        const auto r = static_cast<std::size_t>(t.rank());
        next_fp[r] = keys.link_next.empty() ? "" : keys.link_next.fingerprint();
        prev_fp[r] = keys.link_prev.empty() ? "" : keys.link_prev.fingerprint();
        group_fp[r] = keys.group.fingerprint();
        dataset_fp[r] = released.fingerprint();
        run_ids[r] = keys.run_id();
        EXPECT_EQ(keys.describe().find(released.fingerprint()), std::string::npos);
      }
      SealedChannelOptions opt;
      opt.crypto_threads = 2;
      auto channel = make_sealed_channel(keys, opt);
      RingOptions ro;
      ro.all_gather = AllGatherMode::ForwardWire;
      ro.segment_bytes = 4096;
      RingAllreduce ring(t, *channel, ro);
      auto data = testing::pattern_buffer(5000, t.rank());
      ring.allreduce_sum(data.data(), data.size(), MessageContext{});
      EXPECT_EQ(testing::first_wrong(data, p), -1);
    });
    for (int r = 0; r < p; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      EXPECT_FALSE(errors[ri]) << "P=" << p << " rank " << r << ": " << message_of(errors[ri]);
      EXPECT_EQ(group_fp[ri], group_fp[0]);
      EXPECT_EQ(dataset_fp[ri], dataset_fp[0]);
      EXPECT_EQ(run_ids[ri], run_ids[0]);
      if (p > 1) {
        EXPECT_EQ(next_fp[ri], prev_fp[static_cast<std::size_t>((r + 1) % p)]) << "P=" << p;
      }
    }
    if (p > 2) {
      EXPECT_NE(next_fp[0], next_fp[1]);  // one secret per link
    }
  }
}

// ---- a man in the middle ----

// What the relay between rank 0 and rank 1 does with the evidence each side sends.
enum class Forgery { Record, FreshKey, OtherVendor, RevokedDevice, Replay };

// The adversary on the wire: it sees every message (nonces, evidence, confirmations), replaces each
// rank's evidence with its own answer to the other side's nonce, and records whether any key release
// ever crossed (it must not: refusal comes before any secret is sent).
class Relay {
 public:
  Relay(Forgery f, const Lab& lab, std::vector<std::vector<std::uint8_t>> replay = {})
      : forgery_(f), lab_(lab), replay_(std::move(replay)) {}

  // Called for every send; returns the bytes that go on the wire instead (empty: unchanged).
  std::span<const std::byte> on_send(int src, int dst, std::span<const std::byte> data, int tag) {
    std::lock_guard lk(mu_);
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    if (tag == tags::kAttestNonce) nonce_from_[src].assign(p, p + data.size());
    if (tag == tags::kKeyRelease) ++releases_seen;
    if (tag != tags::kAttestEvidence) return data;
    captured[src].assign(p, p + data.size());
    if (forgery_ == Forgery::Record) return data;  // a passive eavesdropper
    forged_[src] = forge(src, dst);
    return std::as_bytes(std::span(forged_[src]));
  }
  int releases_seen = 0;
  std::map<int, std::vector<std::uint8_t>> captured;  // genuine evidence, by sender

 private:
  std::vector<std::uint8_t> forge(int src, int dst) {
    const tee::Evidence genuine = tee::Evidence::deserialize(captured[src]);
    tee::VerifierNonce nonce{};
    std::copy_n(nonce_from_[dst].begin(), nonce.size(), nonce.begin());  // answer the receiver's challenge
    const auto kx = tee::X25519KeyPair::generate();  // the key the relay would agree with each side
    switch (forgery_) {
      case Forgery::FreshKey: {
        const auto key = tee::Ed25519KeyPair::generate();
        return tee::make_evidence(genuine.rank, genuine.measurement, key, {}, nonce, kx.public_key())
            .serialize();
      }
      case Forgery::OtherVendor:
      case Forgery::RevokedDevice: {
        const auto id = forgery_ == Forgery::OtherVendor ? lab_.device(0, "other_vendor") : lab_.device(4);
        return tee::make_evidence(genuine.rank, genuine.measurement, id->key, id->certificate.der(), nonce,
                                  kx.public_key())
            .serialize();
      }
      case Forgery::Replay:
        return replay_.at(static_cast<std::size_t>(src));
      case Forgery::Record:
        break;
    }
    return {};
  }

  Forgery forgery_;
  const Lab& lab_;
  std::vector<std::vector<std::uint8_t>> replay_;
  std::mutex mu_;
  std::map<int, std::vector<std::uint8_t>> nonce_from_;
  std::map<int, std::vector<std::uint8_t>> forged_;  // kept alive until the send completes
};

class RelayTransport final : public Transport {
 public:
  RelayTransport(Transport& inner, Relay& relay) : inner_(inner), relay_(relay) {
    set_timeout(inner.timeout());
  }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "relay(" + inner_.name() + ")"; }
  Request isend(int peer, std::span<const std::byte> data, int tag) override {
    return inner_.isend(peer, relay_.on_send(rank(), peer, data, tag), tag);
  }
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override {
    return inner_.irecv(peer, buffer, tag);
  }

 private:
  Transport& inner_;
  Relay& relay_;
};

Result through_relay(const Lab& lab, Relay& relay) {
  return handshake(2, lab, {}, {}, [&](Transport& t) { return std::make_unique<RelayTransport>(t, relay); });
}

TEST(SecureSession, ManInTheMiddleIsRefusedOnEveryRankAndGetsNoKey) {
  Lab lab;
  const std::vector<std::pair<Forgery, std::string>> cases = {
      {Forgery::FreshKey, "no device certificate"},
      {Forgery::OtherVendor, "certificate not issued by the trusted vendor root"},
      {Forgery::RevokedDevice, "device certificate revoked by the vendor"}};
  for (const auto& [forgery, reason] : cases) {
    Relay relay(forgery, lab);
    const Result r = through_relay(lab, relay);
    expect_refused_everywhere(r, "attestation refused on every rank: rank 0: " + reason);
    expect_refused_everywhere(r, "rank 1: " + reason);
    EXPECT_EQ(relay.releases_seen, 0) << reason;  // no key material reached the relay
  }
}

TEST(SecureSession, ReplayedEvidenceFromAnEarlierSessionIsRefused) {
  Lab lab;
  // Session 1: a passive relay records both ranks' genuine evidence.
  Relay recorder(Forgery::Record, lab);
  const Result first = through_relay(lab, recorder);
  for (const auto& e : first.errors) ASSERT_FALSE(e) << message_of(e);
  const std::vector<std::vector<std::uint8_t>> recorded = {recorder.captured.at(0), recorder.captured.at(1)};
  EXPECT_EQ(recorder.releases_seen, 1);  // the group key went by, sealed (it cannot open it)
  // Session 2: the relay replays them.
  Relay relay(Forgery::Replay, lab, recorded);
  const Result r = through_relay(lab, relay);
  expect_refused_everywhere(r, "stale nonce");
  EXPECT_EQ(relay.releases_seen, 0);
}

TEST(SecureSession, BinaryOrConfigurationOutsideThePolicyRefusesOnEveryRank) {
  Lab lab;
  for (int p : {2, 3}) {
    const auto r = handshake(p, lab, [](int rank, AttestConfig& c) {
      if (rank == 1) c.run_config += " lr=0.1";
    });
    expect_refused_everywhere(r, "attestation refused on every rank: rank 1: configuration measurement");
  }
  // A modified binary on rank 2 (a genuine device running other code).
  {
    std::ofstream(lab.path() / "modified") << "pretend this is teetrain, patched";
    const auto r = handshake(4, lab, [&](int rank, AttestConfig& c) {
      if (rank == 2) c.binary = lab.path() / "modified";
    });
    expect_refused_everywhere(r, "rank 2: binary measurement");
    expect_refused_everywhere(r, "(reported by ranks 1, 3)");
  }
  // A policy that names another binary refuses every rank, even though they all agree.
  const auto r = handshake(2, lab, [](int, AttestConfig& c) { c.policy.binaries = {tee::Sha256Digest{}}; });
  expect_refused_everywhere(r, "binary measurement");
  // A policy listing the binary actually run passes.
  const tee::Sha256Digest real = tee::measure_binary(lab.path() / "binary");
  const auto ok = handshake(2, lab, [&](int, AttestConfig& c) {
    c.policy.binaries = {tee::Sha256Digest{}, real};
  });
  for (const auto& e : ok.errors) EXPECT_FALSE(e) << message_of(e);
}

TEST(SecureSession, LyingEvidenceRefusesOnEveryRank) {
  Lab lab;
  LyingEvidence bad_signature;
  bad_signature.corrupt_signature = true;
  const auto r = handshake(3, lab, {}, {}, {}, &bad_signature, 2);
  expect_refused_everywhere(r, "rank 2: bad signature (reported by ranks 0, 1)");
  // A rank claiming a binary nobody runs, with a valid signature over the claim.
  LyingEvidence other_binary;
  other_binary.claim = tee::Measurements{};
  const auto m = handshake(3, lab, {}, {}, {}, &other_binary, 1);
  expect_refused_everywhere(m, "rank 1: binary measurement");
  expect_refused_everywhere(m, "(reported by ranks 0, 2)");
}

TEST(SecureSession, RevokedRankRefusesOnEveryRank) {
  Lab lab;
  const auto r = handshake(3, lab, [&](int rank, AttestConfig& c) {
    if (rank == 1) c.identity = lab.device(4);
  });
  expect_refused_everywhere(r, "rank 1: device certificate revoked by the vendor");
}

TEST(SecureSession, MissingIdentityRefusesEverywhereWithTheReason) {
  Lab lab;
  const auto r = handshake(3, lab, [&](int rank, AttestConfig& c) {
    if (rank == 0) c.identity.reset();
  });
  expect_refused_everywhere(r, "rank 0: certified attestation needs a device identity");
}

TEST(SecureSession, WithoutARootOfTrustFreshKeysPass) {
  // --attestation none: every rank signs with a fresh key and nobody checks a chain. It works — and
  // the relay test above shows why it must be flagged: nothing would stop an impostor.
  Lab lab;
  const auto r = handshake(3, lab, [](int, AttestConfig& c) {
    c.mode = AttestationMode::None;
    c.anchor.reset();
    c.identity.reset();
  });
  for (const auto& e : r.errors) EXPECT_FALSE(e) << message_of(e);
  EXPECT_EQ(r.keys[0].attestation, AttestationMode::None);
}

TEST(SecureSession, OneIdentityOnTwoRanksRefusesOnEveryRank) {
  // The common mistake (--device-identity without {rank}) at P = 2, and at P = 4 between ranks 1 and 3,
  // which are not ring neighbours: no rank verified both, yet every rank names both.
  Lab lab;
  const auto two = handshake(2, lab, [&](int, AttestConfig& c) { c.identity = lab.device(0); });
  expect_refused_everywhere(two, "rank 1: the same device identity as rank 0 (device key ");
  expect_refused_everywhere(two, "does --device-identity lack {rank}?");
  const auto four = handshake(4, lab, [&](int rank, AttestConfig& c) {
    if (rank == 3) c.identity = lab.device(1);
  });
  expect_refused_everywhere(four, "rank 3: the same device identity as rank 1");
  expect_refused_everywhere(four, "(reported by ranks 0, 1, 2, 3)");
  // Distinct identities in any order pass.
  const auto shuffled =
      handshake(3, lab, [&](int rank, AttestConfig& c) { c.identity = lab.device(2 - rank); });
  for (const auto& e : shuffled.errors) EXPECT_FALSE(e) << message_of(e);
}

TEST(SecureSession, ARankChecksItsOwnCertificateToo) {
  // Rank 1 holds a revoked device: its own anchor refuses it as its peers do, and the message says both.
  Lab lab;
  const auto r = handshake(2, lab, [&](int rank, AttestConfig& c) {
    if (rank == 1) c.identity = lab.device(4);
  });
  expect_refused_everywhere(r, "rank 1: device certificate revoked by the vendor");
  expect_refused_everywhere(r, "(reported by ranks 0, 1)");
}

TEST(SecureSession, AnAnchorWithoutItsRevocationListIsRefusedUnlessOptedOut) {
  Lab lab;
  const fs::path root = tee::vendor_root_path(lab.path() / "vendor");
  fs::remove(tee::TrustAnchor::crl_beside(root));
  try {
    load_trust_anchor(root);
    ADD_FAILURE() << "loaded a trust anchor without its revocation list";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("teetrain provision --out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--no-revocation-check"), std::string::npos) << e.what();
  }
  const auto without = load_trust_anchor(root, RevocationCheck::OptedOut);
  EXPECT_FALSE(without->checks_revocation());
  // The opted-out anchor accepts the revoked device: that is what every report must flag.
  const auto r = handshake(2, lab, [&](int rank, AttestConfig& c) {
    c.anchor = without;
    if (rank == 1) c.identity = lab.device(4);
  });
  for (const auto& e : r.errors) EXPECT_FALSE(e) << message_of(e);
}

// A fault plan that flips one bit of the first message src sends dst with `tag`.
FaultPlan flip_one(int src, int dst, int tag, int bit) {
  FaultPlan plan;
  FaultRule rule{FaultKind::FlipBit};
  rule.src = src;
  rule.dst = dst;
  rule.tag = tag;
  rule.bit = bit;
  plan.add(rule);
  return plan;
}

TEST(SecureSession, TamperedGroupKeyRefusesOnEveryRank) {
  Lab lab;
  const auto r = handshake(4, lab, {}, flip_one(1, 2, tags::kKeyRelease, 3));
  expect_refused_everywhere(
      r,
      "release of group key refused on every rank: rank 2: group key from rank 1 failed to "
      "open (tag mismatch");
}

TEST(SecureSession, TamperedKeyConfirmationOnTheClosingLinkRefuses) {
  // The closing link P-1 -> 0 carries nothing else at start-up: key confirmation is what checks it.
  Lab lab;
  const auto r = handshake(3, lab, {}, flip_one(2, 0, tags::kKeyConfirm, 5));
  expect_refused_everywhere(r, "rank 2: key confirmation failed");
  expect_refused_everywhere(r, "(reported by rank 0)");
}

// Note [Sizes before receives]: a message longer than its place in the handshake (64 MiB where 731
// bytes of evidence belong) is refused unread, and every rank refuses together naming the sizes
// (AttestationError, exit 3), on every tag of the handshake and the key release.
TEST(SecureSession, AnOversizedHandshakeMessageRefusesOnEveryRank) {
  Lab lab;
  for (const int tag : {tags::kAttestNonce, tags::kAttestEvidence, tags::kKeyConfirm, tags::kKeyRelease}) {
    FaultPlan plan;
    FaultRule rule{FaultKind::Inflate};
    rule.src = 0;
    rule.dst = 1;
    rule.tag = tag;
    rule.grow_to = std::size_t{64} << 20;
    plan.add(rule);
    const auto r = handshake(2, lab, {}, std::move(plan));
    expect_refused_everywhere(r, "rank 1: a message of 67108864 bytes from rank 0 (tag " +
                                     std::to_string(tag) + ") is longer than the receive buffer of ");
    expect_refused_everywhere(r, "refused unread");
  }
}

TEST(SecureSession, EvidenceFilesForTeaching) {
  Lab lab;
  const AttestConfig cfg = lab.config(3);
  const auto nonce = tee::make_verifier_nonce();
  const auto ev = make_local_evidence(cfg, 3, nonce);
  save_evidence(lab.path() / "ev.bin", ev);
  const auto back = load_evidence(lab.path() / "ev.bin");
  EXPECT_EQ(back.serialize(), ev.serialize());
  const auto text = describe(back);
  EXPECT_NE(text.find("rank               3"), std::string::npos) << text;
  EXPECT_NE(text.find(tee::to_hex(ev.measurement.binary)), std::string::npos);
  EXPECT_NE(text.find("EMULATED GPU device 3"), std::string::npos) << text;
  EXPECT_NE(text.find("signature check    valid"), std::string::npos);
  EXPECT_TRUE(verify_evidence(back, cfg, 3, nonce));
  EXPECT_NE(verify_evidence(back, cfg, 3, tee::make_verifier_nonce()).reason.find("stale nonce"),
            std::string::npos);
  EXPECT_NE(verify_evidence(back, cfg, 2).reason.find("rank mismatch"), std::string::npos);
  AttestConfig other = cfg;
  other.run_config += " seed=2";
  EXPECT_NE(verify_evidence(back, other).reason.find("configuration measurement"), std::string::npos);
  // A flipped byte breaks the signature; a cut file is malformed.
  auto bytes = ev.serialize();
  bytes[20] ^= 1;
  const auto forged = tee::Evidence::deserialize(bytes);
  EXPECT_EQ(verify_evidence(forged, cfg).reason, "bad signature");
  EXPECT_NE(describe(forged).find("INVALID"), std::string::npos);
  std::ofstream(lab.path() / "cut.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), 100);
  EXPECT_THROW(load_evidence(lab.path() / "cut.bin"), IntegrityError);
  EXPECT_THROW(load_evidence(lab.path() / "none.bin"), InputError);
  // Policy files: what attest --write-policy writes loads back; a malformed one is bad input.
  std::ofstream(lab.path() / "policy.txt") << policy_text(expected_measurement(cfg));
  const tee::VerifierPolicy p = load_policy(lab.path() / "policy.txt");
  EXPECT_EQ(p.binaries.size(), 1u);
  EXPECT_EQ(p.configs.size(), 1u);
  std::ofstream(lab.path() / "bad.txt") << "binary abcd\n";
  EXPECT_THROW(load_policy(lab.path() / "bad.txt"), InputError);
  // An unusable identity file is a configuration error (exit 2), found before any peer.
  EXPECT_THROW(load_identity(lab.path() / "policy.txt"), InputError);
}

}  // namespace
}  // namespace tt::comm
