// The handshake with real evidence (comm/secure/real_evidence.h) over the in-process transport, with
// a stand-in for the hardware: its "report" is REPORTDATA signed by a key the stand-in verifier trusts,
// so the protocol's own checks are what is tested (the vendors' checks are tee/evidence's, and the CLI
// tests run them). Keys agree for P = 2..4; the message round-trips and any bytes are refused without
// a crash; stale nonce, substituted key, reflected and relayed evidence (the teaching adversary's
// attacks) each refuse on every rank, naming the check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/adversary/adversary_spec.h"
#include "comm/adversary/adversary_transport.h"
#include "comm/secure/real_evidence.h"
#include "comm/secure/secure_session.h"
#include "tee/identity/kx_binding.h"
#include "tests/common/fuzz.h"
#include "tests/common/inproc_transport.h"

namespace tt::comm {
namespace {

using namespace std::chrono_literals;

// The stand-in hardware: cpu = REPORTDATA (64) || Ed25519 signature over it; gpu = the GPU nonce.
class StandIn final : public RealEvidenceProver, public RealEvidenceVerifier {
 public:
  StandIn() : key_(tee::Ed25519KeyPair::generate()) {}
  RealEvidence gather(const RealAttestationKind& kind, const tee::Sha256Digest& challenge) override {
    const tee::ReportData rd = tee::report_data_of(challenge);
    RealEvidence e;
    e.cpu.assign(rd.begin(), rd.end());
    const tee::Signature sig = key_.sign(rd);
    e.cpu.insert(e.cpu.end(), sig.begin(), sig.end());
    if (kind.gpu) {
      const tee::Sha256Digest n = tee::gpu_nonce_of(challenge);
      e.gpu.assign(n.begin(), n.end());
    }
    return e;
  }
  RealVerdict verify(const RealAttestationKind& kind, const RealEvidence& e,
                     const tee::Sha256Digest& challenge) const override {
    const tee::ReportData rd = tee::report_data_of(challenge);
    if (e.cpu.size() != rd.size() + 64)
      return {.ok = false, .reason = "malformed report", .measurements = ""};
    if (!std::equal(rd.begin(), rd.end(), e.cpu.begin()))
      return {.ok = false, .reason = "key substituted: REPORTDATA", .measurements = ""};
    tee::Signature sig{};
    std::copy(e.cpu.begin() + 64, e.cpu.end(), sig.begin());
    if (!tee::ed25519_verify(key_.public_key(), tee::ByteView(e.cpu).first(64), sig))
      return {.ok = false, .reason = "signature check failed", .measurements = ""};
    const tee::Sha256Digest n = tee::gpu_nonce_of(challenge);
    if (kind.gpu && !std::equal(n.begin(), n.end(), e.gpu.begin(), e.gpu.end()))
      return {.ok = false, .reason = "GPU nonce check failed", .measurements = ""};
    return {.ok = true, .reason = "ok", .measurements = "stand-in"};
  }
  std::string describe() const override { return "stand-in"; }
  RealVerifierFacts facts() const override { return {}; }

 private:
  tee::Ed25519KeyPair key_;
};

AttestConfig real_config(const std::shared_ptr<StandIn>& hw, const char* kind) {
  AttestConfig c;
  c.mode = AttestationMode::Real;
  // A small stand-in for the binary: measuring the test executable on every rank is slow. Removed
  // when the test program exits.
  struct StandInBinary {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tt_real_binary_" + std::to_string(::getpid()));
    StandInBinary() { std::ofstream(path) << "pretend this is teetrain"; }
    ~StandInBinary() {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  };
  static const StandInBinary stand_in;
  const auto& binary = stand_in.path;
  c.binary = binary;
  c.run_config = "real evidence test";
  c.real = RealAttestation{.kind = *real_attestation_kind(kind), .prover = hw, .verifier = hw};
  return c;
}

struct Outcome {
  std::vector<std::string> errors;  // "" where the rank succeeded
  std::vector<std::string> next_fp, prev_fp;
};

Outcome run_handshake(int p, const char* kind, const std::string& adversary = "") {
  const auto hw = std::make_shared<StandIn>();
  InprocWorld world(p, {}, 5000ms);
  Outcome out{std::vector<std::string>(static_cast<std::size_t>(p)),
              std::vector<std::string>(static_cast<std::size_t>(p)),
              std::vector<std::string>(static_cast<std::size_t>(p))};
  std::mutex mu;
  const auto errors = world.run([&](Transport& t) {
    std::unique_ptr<AdversaryTransport> adv;
    if (!adversary.empty())
      adv = std::make_unique<AdversaryTransport>(t, parse_adversary(adversary), WireFormat{});
    const SessionKeys keys = establish_keys(adv ? static_cast<Transport&>(*adv) : t, real_config(hw, kind));
    std::lock_guard lock(mu);
    out.next_fp[static_cast<std::size_t>(t.rank())] = keys.link_next.fingerprint();
    out.prev_fp[static_cast<std::size_t>(t.rank())] = keys.link_prev.fingerprint();
  });
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const AttestationError& e) {
      out.errors[r] = e.what();
    } catch (const std::exception& e) {
      out.errors[r] = std::string("WRONG ERROR TYPE: ") + e.what();
    }
  }
  return out;
}

TEST(RealEvidence, KeysAgreeForTwoToFourRanks) {
  for (const char* kind : {"tdx", "snp+gpu"}) {
    for (int p = 2; p <= 4; ++p) {
      const Outcome o = run_handshake(p, kind);
      for (int r = 0; r < p; ++r) {
        ASSERT_EQ(o.errors[static_cast<std::size_t>(r)], "") << kind << " P=" << p << " rank " << r;
        EXPECT_EQ(o.next_fp[static_cast<std::size_t>(r)], o.prev_fp[static_cast<std::size_t>((r + 1) % p)])
            << kind << " P=" << p << " rank " << r;
      }
    }
  }
}

void expect_refused_everywhere(const Outcome& o, const std::string& text) {
  for (std::size_t r = 0; r < o.errors.size(); ++r) {
    EXPECT_NE(o.errors[r].find(text), std::string::npos) << "rank " << r << ": '" << o.errors[r] << "'";
    EXPECT_EQ(o.errors[r].find('\n'), std::string::npos);
  }
}

TEST(RealEvidence, AStaleAnswerIsRefusedOnEveryRank) {
  expect_refused_everywhere(run_handshake(2, "tdx", "stale-nonce@0"), "rank 1: stale nonce");
}

TEST(RealEvidence, ASubstitutedKeyIsRefusedOnEveryRank) {
  expect_refused_everywhere(run_handshake(2, "tdx+gpu", "substitute-key@0"), "rank 0: key substituted");
}

TEST(RealEvidence, ReflectedEvidenceIsRefusedOnEveryRank) {
  expect_refused_everywhere(run_handshake(2, "snp", "reflect@0"), "rank 0: reflected evidence");
}

TEST(RealEvidence, RelayedEvidenceIsRefusedOnEveryRank) {
  expect_refused_everywhere(run_handshake(3, "tdx", "relay@0"),
                            "rank 0: relayed evidence: rank 2's evidence arrived from rank 0");
}

RealEvidenceMessage sample_message() {
  RealEvidenceMessage m;
  m.kind = *real_attestation_kind("snp+gpu");
  m.rank = 3;
  m.answers.fill(0x11);
  m.kx_public.fill(0x22);
  m.evidence.cpu.assign(96, 0x33);
  m.evidence.cpu_certs.assign(20, 0x44);
  m.evidence.gpu.assign(40, 0x55);
  return m;
}

TEST(RealEvidence, MessagesRoundTrip) {
  const RealEvidenceMessage m = sample_message();
  const RealEvidenceMessage back = RealEvidenceMessage::deserialize(m.serialize());
  EXPECT_STREQ(back.kind.name, "snp+gpu");
  EXPECT_EQ(back.rank, 3u);
  EXPECT_EQ(back.answers, m.answers);
  EXPECT_EQ(back.kx_public, m.kx_public);
  EXPECT_EQ(back.evidence.cpu, m.evidence.cpu);
  EXPECT_EQ(back.evidence.cpu_certs, m.evidence.cpu_certs);
  EXPECT_EQ(back.evidence.gpu, m.evidence.gpu);
}

// Any bytes: the parser accepts them or throws IntegrityError, and the handshake's check refuses
// them with a reason, never a crash or another exception.
TEST(RealEvidence, AnyBytesAreRefusedWithoutACrash) {
  const std::vector<std::uint8_t> valid = sample_message().serialize();
  const std::string text(valid.begin(), valid.end());
  const auto hw = std::make_shared<StandIn>();
  int refused = 0;
  for (const auto& in : testing::fuzz_inputs(text, {})) {
    const tee::ByteView bytes(reinterpret_cast<const std::uint8_t*>(in.bytes.data()), in.bytes.size());
    const int rc = testing::run_parser([&] { (void)RealEvidenceMessage::deserialize(bytes); }, in.what);
    EXPECT_TRUE(rc == 0 || rc == 3) << in.what;
    const RealLinkCheck check{.kind = *real_attestation_kind("snp+gpu"),
                              .me = 0,
                              .peer = 3,
                              .mine = {},
                              .own_message = {},
                              .verifier = hw.get()};
    std::optional<RealEvidenceMessage> out;
    const RealVerdict v = check_real_message(bytes, check, out);
    EXPECT_FALSE(v.ok) << in.what;
    EXPECT_FALSE(v.reason.empty()) << in.what;
    refused += v.ok ? 0 : 1;
  }
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace tt::comm
