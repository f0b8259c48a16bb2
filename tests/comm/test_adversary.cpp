// --adversary: the spec parser (including hostile input), the snoop statistics, and each attack of
// AdversaryTransport over in-process ranks (what arrives, and that the caller's buffer is untouched).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/adversary/adversary_gcm.h"
#include "comm/adversary/adversary_transport.h"
#include "comm/secure/secure_session.h"
#include "tee/crypto/aead.h"
#include "tee/identity/attestation.h"
#include "tests/common/fuzz.h"
#include "tests/common/inproc_transport.h"
#include "tests/common/positions.h"

namespace tt::comm {
namespace {

std::string error_of(std::string_view spec) {
  try {
    parse_adversary(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AdversarySpec, ParsesEveryForm) {
  EXPECT_EQ(parse_adversary("snoop").kind, AttackKind::Snoop);
  EXPECT_EQ(parse_adversary("snoop:/tmp/a@b:c").snoop_dir, "/tmp/a@b:c");  // no @RANK for snoop
  const auto flip = parse_adversary("flip:7@3");
  EXPECT_EQ(flip.kind, AttackKind::Flip);
  EXPECT_EQ(flip.nth, 7u);
  EXPECT_EQ(flip.link, 3);
  EXPECT_EQ(parse_adversary("drop:1").link, 0);
  EXPECT_EQ(parse_adversary("replay:2").kind, AttackKind::Replay);
  EXPECT_EQ(parse_adversary("reorder:4").kind, AttackKind::Reorder);
  EXPECT_EQ(parse_adversary("truncate:4").kind, AttackKind::Truncate);
  const auto delay = parse_adversary("delay:2:150@1");
  EXPECT_EQ(delay.delay.count(), 150);
  EXPECT_EQ(delay.link, 1);
  EXPECT_EQ(parse_adversary("mitm").forgery, MitmForgery::OwnVendor);
  EXPECT_EQ(parse_adversary("mitm:cert@1").forgery, MitmForgery::StolenCertificate);
  EXPECT_EQ(parse_adversary("rewrite:3@1").kind, AttackKind::Rewrite);
  EXPECT_EQ(parse_adversary("rewrite:3@1").nth, 3u);
  EXPECT_FALSE(parse_adversary("rewrite:3@1").fit);
  EXPECT_TRUE(parse_adversary("rewrite:3:fit@1").fit);
  EXPECT_EQ(parse_adversary("mitm-relay@1").kind, AttackKind::MitmRelay);
  EXPECT_EQ(parse_adversary("mitm-relay@1").link, 1);
  EXPECT_EQ(parse_adversary("oversize@1").oversize_bytes, std::size_t{64} << 20);
  EXPECT_EQ(parse_adversary("oversize:100000@1").oversize_bytes, 100'000u);
  EXPECT_EQ(parse_adversary("oversize:100000@1").link, 1);
}

// What ranks agree on: one spelling per attack (the default link written out), parsed back to the
// same attack; snoop's directory, each rank's own, left out.
TEST(AdversarySpec, CanonicalSpellingRoundTrips) {
  EXPECT_EQ(canonical_spec(parse_adversary("snoop:/tmp/a@b:c")), "snoop");
  EXPECT_EQ(canonical_spec(parse_adversary("flip:7")), "flip:7@0");
  EXPECT_EQ(canonical_spec(parse_adversary("delay:2:150@1")), "delay:2:150@1");
  EXPECT_EQ(canonical_spec(parse_adversary("mitm")), "mitm@0");
  EXPECT_EQ(canonical_spec(parse_adversary("mitm:cert@1")), "mitm:cert@1");
  EXPECT_EQ(canonical_spec(parse_adversary("mitm-relay@1")), "mitm-relay@1");
  for (const char* spec : {"flip:7@3", "drop:1@0", "replay:2@1", "reorder:4@0", "truncate:4@2", "rewrite:3@1",
                           "rewrite:4:fit@0", "delay:2:150@1", "mitm:cert@1", "mitm-relay@1", "snoop"})
    EXPECT_EQ(canonical_spec(parse_adversary(spec)), spec);
}

TEST(AdversarySpec, RefusesWithAReason) {
  EXPECT_NE(error_of("bogus").find("unknown attack 'bogus'"), std::string::npos);
  EXPECT_NE(error_of("flip").find("needs the message number"), std::string::npos);
  EXPECT_NE(error_of("flip:x").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(error_of("flip:0").find("at least 1"), std::string::npos);
  EXPECT_NE(error_of("replay:1").find("at least 2"), std::string::npos);
  EXPECT_NE(error_of("delay:1").find("delay:N:MS"), std::string::npos);
  EXPECT_NE(error_of("flip:1@-1").find("rank must be at least 0"), std::string::npos);
  EXPECT_NE(error_of("mitm:key").find("only ':cert'"), std::string::npos);
  EXPECT_NE(error_of("snoop:").find("empty directory"), std::string::npos);
  EXPECT_NE(error_of("oversize:0").find("size must be at least 1"), std::string::npos);
  EXPECT_NE(error_of("oversize:4294967296").find("at most 2147483647"), std::string::npos);
  EXPECT_NE(error_of("oversize:1:2").find("only the message's size"), std::string::npos);
  EXPECT_NE(error_of("rewrite:3:pad").find("only ':fit'"), std::string::npos);
  EXPECT_NE(error_of("rewrite:3:fit:fit").find("rewrite:N[:fit]"), std::string::npos);
  EXPECT_THROW(check_adversary(parse_adversary("flip:1@2"), 2), InputError);
  EXPECT_THROW(check_adversary(parse_adversary("snoop"), 1), InputError);
  EXPECT_NO_THROW(check_adversary(parse_adversary("flip:1@1"), 2));
}

// The banner names the link where every gradient message of rank r goes to one peer, and rank r's
// sends and all their receivers where the algorithm spreads them (hier: its node and its local index).
TEST(AdversarySpec, DescribesTheAttackedRanksReceivers) {
  const AdversarySpec flip = parse_adversary("flip:3@0");
  EXPECT_EQ(describe(flip, 4), "flip: inverts one bit of gradient message 3 on the link rank 0 -> rank 1");
  EXPECT_EQ(describe(flip, 4, GradientRoute{.peers = {2}, .algorithm = "x"}),
            "flip: inverts one bit of gradient message 3 on the link rank 0 -> rank 2");
  EXPECT_EQ(
      describe(flip, 4, GradientRoute{.peers = {1, 2}, .algorithm = "the hierarchical all-reduce"}),
      "flip: inverts one bit of gradient message 3 that rank 0 sends (the hierarchical all-reduce sends "
      "rank 0's to ranks 1 and 2; the line that fires names the receiver)");
  EXPECT_EQ(ranks_text({1, 3, 2}), "ranks 1, 3 and 2");
}

TEST(AdversarySpec, HostileSpecsNeverCrash) {
  std::mt19937 rng(7);
  const std::string alphabet = "snopflipdrmtc:@0123456789-x";
  for (int i = 0; i < 5000; ++i) {
    std::string s(rng() % 20, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    try {
      parse_adversary(s);
    } catch (const InputError&) {
    }
  }
}

TEST(Snoop, RandomBytesLookRandomAndGradientsDoNot) {
  std::mt19937 rng(1);
  std::vector<std::byte> noise(1 << 16);
  for (auto& b : noise) b = static_cast<std::byte>(rng());
  TrafficStats r;
  r.add(noise, WireFormat{});
  EXPECT_GT(r.entropy_bits(), 7.99);
  EXPECT_NEAR(r.plausible_fraction(), kRandomPlausible, 0.02);

  std::normal_distribution<float> grad(0.0f, 1e-3f);
  std::vector<float> g(1 << 14);
  for (float& x : g) x = grad(rng);
  TrafficStats c;
  c.add(std::as_bytes(std::span(g)), WireFormat{});
  EXPECT_GT(c.plausible_fraction(), 0.99);
  EXPECT_LT(c.entropy_bits(), 7.9);
  EXPECT_FLOAT_EQ(c.first_values[0], g[0]);
}

TEST(Snoop, SealedClearHeaderIsNotCountedAsCiphertext) {
  const WireFormat sealed{true, 12, 16};
  std::vector<std::byte> m(100 + 16 + 12, std::byte{0});
  TrafficStats s;
  s.add(m, sealed);
  EXPECT_EQ(s.bytes, 128u);
  EXPECT_EQ(s.body_bytes, 116u);  // ciphertext and tag
  EXPECT_EQ(s.values, 25u);       // the ciphertext's words only
  const auto back = SnoopLog::deserialize(SnoopLog::serialize({s}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].values, 25u);
}

// Rank 0 sends `messages` (tag kRing unless given) to rank 1 through the adversary; returns what
// rank 1 received, each resized to its real length.
std::vector<std::vector<float>> deliver(const std::string& spec,
                                        const std::vector<std::vector<float>>& messages,
                                        std::vector<std::vector<float>>* after_send = nullptr,
                                        std::size_t receives = 0) {
  InprocWorld world(2, {}, std::chrono::milliseconds(2000));
  std::vector<std::vector<float>> got(receives ? receives : messages.size());
  std::vector<std::vector<float>> sent = messages;
  const auto errors = world.run([&](Transport& t) {
    AdversaryTransport adv(t, parse_adversary(spec), WireFormat{});
    if (t.rank() == 0) {
      for (auto& m : sent) {
        Request r = adv.isend(1, std::as_bytes(std::span(m)), tags::kRing);
        adv.wait(r);
      }
    } else {
      for (auto& g : got) {
        g.assign(messages.front().size(), -1.0f);
        Request r = adv.irecv(0, std::as_writable_bytes(std::span(g)), tags::kRing);
        g.resize(adv.wait(r) / sizeof(float));
      }
    }
  });
  for (const auto& e : errors) EXPECT_FALSE(e);
  if (after_send) *after_send = sent;
  return got;
}

const std::vector<std::vector<float>> kThree = {{1e-3f, 2e-3f, 3e-3f, 4e-3f}, {5, 6, 7, 8}, {9, 10, 11, 12}};

TEST(AdversaryTransport, FlipChangesOneBitOfTheCopyOnly) {
  std::vector<std::vector<float>> caller;
  const auto got = deliver("flip:1", kThree, &caller);
  EXPECT_EQ(caller, kThree);  // the sender's own buffer is never touched
  ASSERT_EQ(got[0].size(), 4u);
  int differing_bits = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, &got[0][i], 4);
    std::memcpy(&b, &kThree[0][i], 4);
    differing_bits += __builtin_popcount(a ^ b);
  }
  EXPECT_EQ(differing_bits, 1);
  EXPECT_GT(got[0][2], 1e30f);  // the middle value's top exponent bit: a tiny gradient becomes huge
  EXPECT_EQ(got[1], kThree[1]);
}

TEST(AdversaryTransport, FlipCopesWithEmptyAndTinyMessages) {
  InprocWorld world(2, {}, std::chrono::milliseconds(2000));
  const std::vector<std::byte> tiny{std::byte{0x01}, std::byte{0x02}};
  std::vector<std::byte> got_empty(4), got_tiny(4);
  std::size_t n_empty = 99, n_tiny = 99;
  std::string report;
  const auto errors = world.run([&](Transport& t) {
    AdversaryTransport adv(t, parse_adversary("flip:1"), WireFormat{});
    if (t.rank() == 0) {
      Request a = adv.isend(1, {}, tags::kRing);  // an empty chunk (count < P)
      adv.wait(a);
    } else {
      Request a = adv.irecv(0, got_empty, tags::kRing);
      n_empty = adv.wait(a);
    }
    const std::string r = adv.report();  // collective, with an event on rank 0 only
    if (t.rank() == 0) report = r;
  });
  for (const auto& e : errors) EXPECT_FALSE(e);
  EXPECT_EQ(n_empty, 0u);
  EXPECT_NE(report.find("found nothing to flip"), std::string::npos) << report;
  InprocWorld world2(2, {}, std::chrono::milliseconds(2000));
  world2.run([&](Transport& t) {
    AdversaryTransport adv(t, parse_adversary("flip:1"), WireFormat{});
    if (t.rank() == 0) {
      Request a = adv.isend(1, tiny, tags::kRing);
      adv.wait(a);
    } else {
      Request a = adv.irecv(0, got_tiny, tags::kRing);
      n_tiny = adv.wait(a);
    }
  });
  ASSERT_EQ(n_tiny, 2u);
  EXPECT_EQ(got_tiny[0], tiny[0]);
  EXPECT_EQ(got_tiny[1], tiny[1] ^ std::byte{0x40});  // the last byte's bit 6
}

TEST(AdversaryTransport, DropReplayReorderTruncate) {
  EXPECT_EQ(deliver("drop:2", kThree, nullptr, 2), (std::vector<std::vector<float>>{kThree[0], kThree[2]}));
  EXPECT_EQ(deliver("replay:2", kThree), (std::vector<std::vector<float>>{kThree[0], kThree[0], kThree[2]}));
  EXPECT_EQ(deliver("reorder:1", kThree), (std::vector<std::vector<float>>{kThree[1], kThree[0], kThree[2]}));
  const auto cut = deliver("truncate:3", kThree);
  EXPECT_EQ(cut[2], (std::vector<float>{9, 10}));
}

TEST(AdversaryTransport, CountsOnlyGradientMessagesOnTheAttackedLink) {
  InprocWorld world(2, {}, std::chrono::milliseconds(2000));
  std::vector<float> bcast = {1, 2}, grad = {1e-3f, 2e-3f}, got_b(2), got_g(2);
  std::vector<std::string> events;
  world.run([&](Transport& t) {
    AdversaryTransport adv(t, parse_adversary("flip:1"), WireFormat{});
    if (t.rank() == 0) {
      Request a = adv.isend(1, std::as_bytes(std::span(bcast)), tags::kBroadcast);
      Request b = adv.isend(1, std::as_bytes(std::span(grad)), tags::kRing);
      adv.wait(a);
      adv.wait(b);
    } else {
      Request a = adv.irecv(0, std::as_writable_bytes(std::span(got_b)), tags::kBroadcast);
      Request b = adv.irecv(0, std::as_writable_bytes(std::span(got_g)), tags::kRing);
      adv.wait(a);
      adv.wait(b);
    }
    const std::string report = adv.report();  // collective
    if (t.rank() == 0) events.push_back(report);
  });
  EXPECT_EQ(got_b, bcast);
  EXPECT_NE(got_g, grad);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("rank 0: flipped bit 6 of byte 7 of gradient message 1"), std::string::npos)
      << events[0];
  EXPECT_NE(events[0].find("NOTHING DETECTED"), std::string::npos) << events[0];
}

TEST(AdversaryTransport, SnoopReportCoversEveryLink) {
  InprocWorld world(3, {}, std::chrono::milliseconds(2000));
  std::string report;
  world.run([&](Transport& t) {
    AdversaryTransport adv(t, parse_adversary("snoop"), WireFormat{});
    std::vector<float> out(64, 1e-3f), in(64);
    const int next = (t.rank() + 1) % 3, prev = (t.rank() + 2) % 3;
    Request r = adv.irecv(prev, std::as_writable_bytes(std::span(in)), tags::kRing);
    Request s = adv.isend(next, std::as_bytes(std::span(out)), tags::kRing);
    adv.wait(s);
    adv.wait(r);
    const std::string mine = adv.report();
    if (t.rank() == 0) report = mine;
  });
  for (const char* link : {"0 -> 1", "1 -> 2", "2 -> 0"})
    EXPECT_NE(report.find(link), std::string::npos) << report;
  EXPECT_NE(report.find("gradients READABLE: 100.0% of 192 values"), std::string::npos) << report;
}

// rewrite needs a previous message; mitm-relay takes no arguments and a link the key release crosses.
TEST(AdversarySpec, RewriteAndRelayRefuseWhatCannotWork) {
  EXPECT_NE(error_of("rewrite:1").find("message number must be at least 2"), std::string::npos);
  EXPECT_NE(error_of("mitm-relay:x").find("takes no arguments"), std::string::npos);
  EXPECT_THROW(check_adversary(parse_adversary("mitm-relay@3"), 4), InputError);
  EXPECT_NO_THROW(check_adversary(parse_adversary("mitm-relay@2"), 4));
  EXPECT_NO_THROW(check_adversary(parse_adversary("mitm-relay@1"), 2));  // P = 2: both directions cross
}

TEST(AdversaryGcm, FieldArithmetic) {
  const gcm::Block one{std::uint64_t{1} << 63, 0};
  const gcm::Block x{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(gcm::mul(x, one), x);
  EXPECT_EQ(gcm::mul(x, gcm::inverse(x)), one);
  EXPECT_EQ(gcm::power(x, 3), gcm::mul(x, gcm::mul(x, x)));
  EXPECT_EQ(gcm::power(x, 0), one);
}

// With the key, one genuine tag gives away the associated data's unknown bits: the relay's re-seal.
TEST(AdversaryGcm, SolvesTheUnknownBitsOfTheAssociatedDataFromTheTag) {
  std::mt19937 rng(7);
  auto random_bytes = [&](std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
  };
  const tee::SecretBytes key = tee::SecretBytes::random(32);
  const tee::StreamPosition at = tt::testing::position_at(1, 42);
  for (std::size_t len : {0u, 5u, 16u, 1000u}) {
    const auto aad = random_bytes(75);
    const auto plain = random_bytes(len);
    std::vector<std::uint8_t> ct(len);
    tee::Tag tag{};
    tee::Aead(tee::Cipher::Aes256Gcm, key.view()).seal(at, aad, plain, ct, tag);
    std::vector<std::size_t> unknown;
    for (std::size_t b = 224; b < 224 + 100; ++b) unknown.push_back(b);  // 100 bits in the middle
    auto templ = aad;
    for (std::size_t b : unknown) templ[b / 8] &= static_cast<std::uint8_t>(~(0x80u >> (b % 8)));
    const auto opened = gcm::solve_and_open(key, at, ct, tag, templ, unknown);
    ASSERT_TRUE(opened) << len;
    EXPECT_EQ(opened->aad, aad) << len;
    EXPECT_EQ(opened->plain, plain) << len;
    // Another key, or a known bit that is wrong: no assignment of the unknown bits opens it.
    EXPECT_FALSE(gcm::solve_and_open(tee::SecretBytes::random(32), at, ct, tag, templ, unknown)) << len;
    templ[0] ^= 1;
    EXPECT_FALSE(gcm::solve_and_open(key, at, ct, tag, templ, unknown)) << len;
  }
}

// The relay reads what crosses the link: evidence, key releases, sealed messages. Whatever arrives, it
// forges, re-seals or lets the bytes pass; it never crashes or throws.
TEST(AdversaryRelay, HostileBytesNeverCrashIt) {
  Relay relay(0, 2, [](const std::string&) {});
  const tee::Measurements m = tee::measure("/proc/self/exe", "{}");
  auto evidence = [&](std::uint32_t rank) {
    const auto key = tee::Ed25519KeyPair::generate();
    return tee::make_evidence(rank, m, key, {}, tee::make_verifier_nonce(),
                              tee::X25519KeyPair::generate().public_key())
        .serialize();
  };
  const auto e0 = evidence(0);
  const auto e1 = evidence(1);
  const auto as_bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  ASSERT_TRUE(relay.relay(0, 1, tags::kAttestEvidence, as_bytes(e0)));  // forged for rank 1
  ASSERT_TRUE(relay.relay(1, 0, tags::kAttestEvidence, as_bytes(e1)));  // forged for rank 0: keys agreed
  EXPECT_EQ(relay.relay(0, 1, tags::kKeyConfirm, as_bytes(e0))->size(), 32u);
  const std::string valid(reinterpret_cast<const char*>(e0.data()), e0.size());
  for (const auto& in : testing::fuzz_inputs(valid, {})) {
    for (int tag : {tags::kAttestEvidence, tags::kKeyRelease, tags::kRing, tags::kBroadcast}) {
      testing::run_parser([&] { relay.relay(0, 1, tag, std::as_bytes(std::span(in.bytes))); }, in.what);
      testing::run_parser([&] { relay.relay(1, 0, tag, std::as_bytes(std::span(in.bytes))); }, in.what);
    }
  }
}

}  // namespace
}  // namespace tt::comm
