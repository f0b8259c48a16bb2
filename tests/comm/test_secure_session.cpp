// The attested handshake over the in-process transport: keys agree for P = 1..4 and drive a sealed
// ring; a wrong configuration, a bad signature, a device key off the allow-list, or a tampered group
// key refuses on EVERY rank naming the culprit; evidence files round-trip for `teetrain attest`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "comm/attest_evidence.h"
#include "comm/inproc_transport.h"
#include "comm/ring_allreduce.h"
#include "comm/secure_session.h"
#include "engine/core/error.h"
#include "tests/comm/comm_test_util.h"

namespace tt::comm {
namespace {

using namespace std::chrono_literals;

std::string message_of(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

// A small stand-in for the binary (measuring the real test executable on every rank is slow).
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("tt_secure_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
    std::ofstream(path_ / "binary") << "pretend this is teetrain";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

AttestConfig base_config(const TempDir& dir) {
  AttestConfig c;
  c.binary = dir.path() / "binary";
  c.run_config = "model=gpt2-tiny tee=fast cipher=aes-256-gcm";
  return c;
}

// Runs establish_keys on every rank; `tweak` adjusts one rank's config.
struct Result {
  std::vector<std::exception_ptr> errors;
  std::vector<SessionKeys> keys;
};
Result handshake(int p, const AttestConfig& base, const std::function<void(int, AttestConfig&)>& tweak = {},
                 FaultPlan faults = {}, std::chrono::milliseconds timeout = 5000ms) {
  InprocWorld world(p, std::move(faults), timeout);
  Result res;
  res.keys.resize(static_cast<std::size_t>(p));
  res.errors = world.run([&](Transport& t) {
    AttestConfig cfg = base;
    if (tweak) tweak(t.rank(), cfg);
    res.keys[static_cast<std::size_t>(t.rank())] = establish_keys(t, cfg);
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
  TempDir dir;
  for (int p = 1; p <= 4; ++p) {
    InprocWorld world(p);
    std::mutex mu;
    std::vector<std::string> next_fp(static_cast<std::size_t>(p)), prev_fp(static_cast<std::size_t>(p)),
        group_fp(static_cast<std::size_t>(p)), dataset_fp(static_cast<std::size_t>(p));
    std::vector<std::array<std::uint8_t, 16>> run_ids(static_cast<std::size_t>(p));
    const auto errors = world.run([&](Transport& t) {
      SessionKeys keys = establish_keys(t, base_config(dir));
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

TEST(SecureSession, WrongConfigRefusesOnEveryRank) {
  TempDir dir;
  for (int p : {2, 3}) {
    const auto r = handshake(p, base_config(dir), [](int rank, AttestConfig& c) {
      if (rank == 1) c.run_config += " lr=0.1";
    });
    expect_refused_everywhere(
        r, "attestation refused on every rank: rank 1: measurement mismatch (reported by rank");
  }
}

TEST(SecureSession, WrongMeasurementOverrideRefuses) {
  TempDir dir;
  const auto r = handshake(4, base_config(dir), [](int rank, AttestConfig& c) {
    if (rank == 2) c.measurement_override = tee::Measurement{};
  });
  expect_refused_everywhere(r, "rank 2: measurement mismatch (reported by ranks 1, 3)");
}

TEST(SecureSession, BadSignatureRefusesOnEveryRank) {
  TempDir dir;
  const auto r =
      handshake(3, base_config(dir), [](int rank, AttestConfig& c) { c.corrupt_evidence = rank == 2; });
  expect_refused_everywhere(r, "rank 2: bad signature (reported by ranks 0, 1)");
}

TEST(SecureSession, DeviceKeyOffTheAllowListRefuses) {
  TempDir dir;
  std::vector<tee::PublicKey> pubs;
  for (int i = 0; i < 3; ++i) {
    const auto k = tee::Ed25519KeyPair::generate();
    k.save_pem(dir.path() / ("device" + std::to_string(i) + ".pem"));
    pubs.push_back(k.public_key());
  }
  {
    std::ofstream list(dir.path() / "allow.txt");
    list << "# allowed devices\n" << tee::to_hex(pubs[0]) << "\n\n" << tee::to_hex(pubs[2]) << "  # rank 2\n";
  }
  AttestConfig base = base_config(dir);
  base.allowed_device_keys = load_allow_list(dir.path() / "allow.txt");
  ASSERT_EQ(base.allowed_device_keys.size(), 2U);
  const auto tweak = [&](int rank, AttestConfig& c) {
    c.device_key_pem = dir.path() / ("device" + std::to_string(rank) + ".pem");
  };
  expect_refused_everywhere(handshake(3, base, tweak),
                            "rank 1: device key not in allow-list (reported by ranks 0, 2)");
  // With rank 1 on the list, the same keys are accepted.
  {
    std::ofstream list(dir.path() / "allow.txt", std::ios::app);
    list << tee::to_hex(pubs[1]) << "\n";
  }
  base.allowed_device_keys = load_allow_list(dir.path() / "allow.txt");
  const auto ok = handshake(3, base, tweak);
  for (const auto& e : ok.errors) EXPECT_FALSE(e) << message_of(e);
  EXPECT_EQ(ok.keys[1].device_public_key, pubs[1]);
  // A malformed list is bad input.
  std::ofstream(dir.path() / "bad.txt") << "abcd\n";
  EXPECT_THROW(load_allow_list(dir.path() / "bad.txt"), InputError);
}

TEST(SecureSession, MissingDeviceKeyRefusesEverywhereWithTheReason) {
  TempDir dir;
  const auto r = handshake(3, base_config(dir), [&](int rank, AttestConfig& c) {
    if (rank == 0) c.device_key_pem = dir.path() / "missing.pem";
  });
  expect_refused_everywhere(r, "rank 0: device key");
}

TEST(SecureSession, TamperedGroupKeyRefusesOnEveryRank) {
  TempDir dir;
  FaultPlan plan;
  FaultRule rule{FaultKind::FlipBit};
  rule.src = 1;
  rule.dst = 2;
  rule.tag = tags::kKeyRelease;
  rule.bit = 3;
  plan.add(rule);
  const auto r = handshake(4, base_config(dir), {}, plan);
  expect_refused_everywhere(
      r,
      "release of group key refused on every rank: rank 2: group key from rank 1 failed to "
      "open (tag mismatch");
}

TEST(SecureSession, EvidenceFilesForTeaching) {
  TempDir dir;
  const AttestConfig cfg = base_config(dir);
  const auto nonce = tee::make_verifier_nonce();
  const auto ev = make_local_evidence(cfg, 3, nonce);
  save_evidence(dir.path() / "ev.bin", ev);
  const auto back = load_evidence(dir.path() / "ev.bin");
  EXPECT_EQ(back.serialize(), ev.serialize());
  const auto text = describe(back);
  EXPECT_NE(text.find("rank               3"), std::string::npos) << text;
  EXPECT_NE(text.find(tee::to_hex(ev.measurement)), std::string::npos);
  EXPECT_NE(text.find("signature check    valid"), std::string::npos);
  EXPECT_TRUE(verify_evidence(back, cfg, 3, nonce));
  EXPECT_EQ(verify_evidence(back, cfg, 2).reason, "rank mismatch");
  AttestConfig other = cfg;
  other.run_config += " seed=2";
  EXPECT_EQ(verify_evidence(back, other).reason, "measurement mismatch");
  // A flipped byte breaks the signature; a cut file is malformed.
  auto bytes = ev.serialize();
  bytes[20] ^= 1;
  const auto forged = tee::Evidence::deserialize(bytes);
  EXPECT_EQ(verify_evidence(forged, cfg).reason, "bad signature");
  EXPECT_NE(describe(forged).find("INVALID"), std::string::npos);
  std::ofstream(dir.path() / "cut.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), 100);
  EXPECT_THROW(load_evidence(dir.path() / "cut.bin"), tee::IntegrityError);
  EXPECT_THROW(load_evidence(dir.path() / "none.bin"), InputError);
}

}  // namespace
}  // namespace tt::comm
