#include "comm/secure/secure_session.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "comm/collectives.h"
#include "comm/secure/rank_identities.h"
#include "tee/bytes.h"
#include "tee/crypto/aead.h"
#include "tee/identity/kx_binding.h"
#include "tee/identity/traffic_keys.h"

namespace tt::comm {

namespace {

// The status every rank contributes after a handshake round, in clear (there may be no key yet, and
// it holds nothing secret): its measurement, what it knows of device identities (its own and its
// neighbours': Note [one identity per rank] in comm/secure/rank_identities.h), then its failures as text
// lines "subject|reason" (subject = the rank found at fault), NUL-padded.
constexpr std::size_t kStatusBytes = 2048;
constexpr std::size_t kMeasurementBytes = 32;
constexpr std::size_t kIdentitySlots = 3;  // own, next, prev
constexpr std::size_t kTextAt = kMeasurementBytes + kIdentitySlots * kIdentityRecordBytes;

struct Failure {
  int subject = 0;
  std::string reason;
};

struct Status {
  tee::Sha256Digest measurement{};
  std::vector<IdentityRecord> identities;  // at most kIdentitySlots
  std::vector<Failure> failures;
};

std::vector<std::byte> encode_status(const Status& st) {
  std::vector<std::byte> blob(kStatusBytes);
  std::transform(st.measurement.begin(), st.measurement.end(), blob.begin(),
                 [](std::uint8_t b) { return std::byte{b}; });
  for (std::size_t i = 0; i < kIdentitySlots; ++i) {
    const auto slot =
        std::span(blob).subspan(kMeasurementBytes + i * kIdentityRecordBytes, kIdentityRecordBytes);
    encode_identity(i < st.identities.size() ? st.identities[i] : IdentityRecord{}, slot);
  }
  std::string text;
  for (const auto& f : st.failures) text += std::to_string(f.subject) + "|" + f.reason + "\n";
  text.resize(std::min(text.size(), kStatusBytes - kTextAt));
  std::transform(text.begin(), text.end(), blob.begin() + kTextAt,
                 [](char c) { return static_cast<std::byte>(c); });
  return blob;
}

Status decode_status(std::span<const std::byte> block) {
  Status st;
  std::transform(block.begin(), block.begin() + kMeasurementBytes, st.measurement.begin(),
                 [](std::byte b) { return std::to_integer<std::uint8_t>(b); });
  for (std::size_t i = 0; i < kIdentitySlots; ++i)
    st.identities.push_back(
        decode_identity(block.subspan(kMeasurementBytes + i * kIdentityRecordBytes, kIdentityRecordBytes)));
  std::string text;
  for (std::byte b : block.subspan(kTextAt)) {
    if (b == std::byte{0}) break;
    text.push_back(static_cast<char>(b));
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto bar = line.find('|');
    if (bar != std::string::npos)
      st.failures.push_back({std::atoi(line.substr(0, bar).c_str()), line.substr(bar + 1)});
  }
  return st;
}

// Who is to blame is not always clear: a rank with the wrong configuration rejects its honest
// neighbours just as they reject it. Reports are therefore trusted from ranks that hold the
// measurement most ranks hold (ties: the lowest rank's), plus what each rank says about itself.
std::vector<bool> trusted_reporters(const std::vector<Status>& all) {
  const std::size_t p = all.size();
  std::vector<int> holders(p, 0);  // ranks sharing rank r's measurement
  for (std::size_t a = 0; a < p; ++a)
    for (std::size_t b = 0; b < p; ++b)
      if (all[a].measurement == all[b].measurement) ++holders[a];
  const std::size_t reference =
      static_cast<std::size_t>(std::max_element(holders.begin(), holders.end()) - holders.begin());
  std::vector<bool> trusted(p);
  for (std::size_t r = 0; r < p; ++r) trusted[r] = all[r].measurement == all[reference].measurement;
  return trusted;
}

// (subject, reason) -> reporters, in order of subjects.
using Reports = std::map<std::pair<int, std::string>, std::set<int>>;

std::string refusal_message(const std::string& what, const Reports& reports) {
  std::string msg = what + " refused on every rank:";
  for (const auto& [key, reporters] : reports) {
    msg += " rank " + std::to_string(key.first) + ": " + key.second + " (reported by rank" +
           (reporters.size() > 1 ? "s" : "");
    std::string names;
    for (int r : reporters) names += (names.empty() ? " " : ", ") + std::to_string(r);
    msg += names + ");";
  }
  if (reports.empty()) msg += " reports only from ranks whose own measurement differs from the majority;";
  msg.pop_back();
  return msg;
}

// Allgathers every rank's status and throws the same AttestationError on every rank if any rank
// reported a failure or two ranks share a device identity.
void refuse_on_every_rank(Transport& t, const Status& mine, const std::string& what) {
  std::vector<std::byte> all;
  try {
    all = Collectives(t).allgather(encode_status(mine));
  } catch (const FramingError& e) {
    // Note [Sizes before receives]: attestation bytes out of their place are an attack signal.
    throw AttestationError(what + " refused on rank " + std::to_string(t.rank()) + ": " + e.what());
  }
  std::vector<Status> statuses;
  for (int r = 0; r < t.size(); ++r)
    statuses.push_back(
        decode_status(std::span(all).subspan(static_cast<std::size_t>(r) * kStatusBytes, kStatusBytes)));
  const std::vector<bool> trusted = trusted_reporters(statuses);

  Reports reports;
  std::size_t total = 0;
  std::vector<IdentityReport> identities;
  for (std::size_t reporter = 0; reporter < statuses.size(); ++reporter) {
    const int who = static_cast<int>(reporter);
    for (const Failure& f : statuses[reporter].failures) {
      ++total;
      if (trusted[reporter] || f.subject == who) reports[{f.subject, f.reason}].insert(who);
    }
    identities.push_back({who, trusted[reporter], statuses[reporter].identities});
  }
  for (const IdentityConflict& c : identity_conflicts(identities)) {
    ++total;
    reports[{c.subject, c.reason}].insert(c.reporters.begin(), c.reporters.end());
  }
  if (total > 0) throw AttestationError(refusal_message(what, reports));
}

// Waits for one handshake message. Note [Sizes before receives] (comm/transport.h): a message longer
// than its place was refused unread, which is its sender's failure (`subject`): reported with the
// others, so that every rank refuses together (AttestationError, exit 3); nullopt then.
std::optional<std::size_t> wait_for(Transport& t, Request& r, const AttestConfig* cfg,
                                    std::vector<Failure>& failures, int subject) {
  try {
    return cfg != nullptr && cfg->timeout.count() > 0 ? t.wait(r, cfg->timeout) : t.wait(r);
  } catch (const FramingError& e) {
    failures.push_back({subject, e.what()});
    return std::nullopt;
  }
}

}  // namespace

ChannelKeys SessionKeys::channel_keys() const {
  ChannelKeys k;
  if (world_size > 1) {
    const int next = (rank + 1) % world_size;
    const int prev = (rank + world_size - 1) % world_size;
    // Directional: with P = 2 both links share one secret, but each direction gets its own key.
    k.send = tee::derive_link_stream_secret(link_next, static_cast<std::uint32_t>(rank),
                                            static_cast<std::uint32_t>(next));
    k.recv = tee::derive_link_stream_secret(link_prev, static_cast<std::uint32_t>(prev),
                                            static_cast<std::uint32_t>(rank));
  }
  if (!group.empty()) k.group = tee::derive_group_traffic_secret(group);
  return k;
}

std::array<std::uint8_t, 16> SessionKeys::run_id() const {
  return group.empty() ? std::array<std::uint8_t, 16>{} : tee::derive_run_id(group);
}

std::string SessionKeys::describe() const {
  auto fp = [](const auto& key) { return key.empty() ? std::string("none") : key.fingerprint(); };
  return "rank " + std::to_string(rank) + ": measurement " + tee::to_hex(measurement).substr(0, 16) +
         ", device key " + tee::to_hex(device_public_key).substr(0, 16) + ", link next fp " + fp(link_next) +
         ", link prev fp " + fp(link_prev) + ", group fp " + fp(group);
}

namespace {

// One ring neighbour of the handshake: the challenge we sent, the one we answer, our ephemeral key
// and evidence for it, what arrived, and the secret agreed once its evidence passed.
struct Link {
  int peer = 0;
  tee::VerifierNonce mine{};    // our nonce: the peer's evidence must answer it
  tee::VerifierNonce theirs{};  // the peer's nonce: our evidence answers it
  bool challenge_ok = false;
  std::optional<tee::X25519KeyPair> kx;
  tee::Evidence my_evidence;
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> in;
  tee::LinkSecret secret;
  tee::Sha256Digest confirm_in{};
  IdentityRecord peer_identity;   // the peer's, once its evidence passed
  std::string peer_measurements;  // real evidence: what was verified of the peer (RealVerdict)
};

// What this rank brings to the handshake.
struct LocalParty {
  std::optional<tee::Ed25519KeyPair> fresh;  // mode None: a key for this session only
  const tee::Ed25519KeyPair* key = nullptr;  // null if it could not be loaded
  tee::VerifierPolicy policy;
};

std::vector<Link> ring_links(int r, int p) {
  std::vector<Link> links;
  if (p > 1) {
    links.push_back({});
    links.back().peer = (r + 1) % p;
    if (p > 2) {
      links.push_back({});
      links.back().peer = (r + p - 1) % p;
    }
  }
  return links;
}

void exchange_challenges(Transport& t, std::vector<Link>& links, const AttestConfig& config,
                         std::vector<Failure>& failures) {
  std::vector<Request> reqs;
  for (auto& l : links)
    reqs.push_back(t.irecv(l.peer, std::as_writable_bytes(std::span(l.theirs)), tags::kAttestNonce));
  for (auto& l : links) {
    l.mine = tee::make_verifier_nonce();
    reqs.push_back(t.isend(l.peer, std::as_bytes(std::span(l.mine)), tags::kAttestNonce));
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto got = wait_for(t, reqs[i], &config, failures, reqs[i].peer());
    if (i < links.size()) links[i].challenge_ok = got == sizeof(tee::VerifierNonce);
  }
}

// One round of the evidence exchange: every link's message `l.out` goes to its peer and up to
// `max_in` bytes come back into `l.in`; `check` runs on each well-formed arrival. Both the emulated
// and the real exchange use it, so their waits, timeouts and malformed-message verdicts agree.
void swap_evidence(Transport& t, std::vector<Link>& links, const AttestConfig& config, std::size_t max_in,
                   std::vector<Failure>& failures, const std::function<void(Link&)>& check) {
  std::vector<Request> reqs;
  for (auto& l : links) {
    l.in.assign(max_in, 0);
    reqs.push_back(t.irecv(l.peer, std::as_writable_bytes(std::span(l.in)), tags::kAttestEvidence));
  }
  for (auto& l : links)
    reqs.push_back(t.isend(l.peer, std::as_bytes(std::span(l.out)), tags::kAttestEvidence));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto got = wait_for(t, reqs[i], &config, failures, reqs[i].peer());
    if (i >= links.size() || !got) continue;
    Link& l = links[i];
    l.in.resize(*got);
    if (!l.challenge_ok) {
      failures.push_back({l.peer, "malformed handshake message"});
      continue;
    }
    check(l);
  }
}

// Our evidence answers each neighbour's nonce; theirs is verified against our anchor, policy and
// nonce, and only then is a link secret derived from the transcript of both evidences.
void exchange_evidence(Transport& t, std::vector<Link>& links, const LocalParty& me,
                       const AttestConfig& config, const EvidenceSource& source,
                       const tee::Measurements& mine, std::vector<Failure>& failures) {
  const int r = t.rank();
  const std::vector<std::uint8_t> cert =
      config.identity ? config.identity->certificate.der() : std::vector<std::uint8_t>{};
  for (auto& l : links) {
    l.kx.emplace(tee::X25519KeyPair::generate());
    l.out.assign(tee::Evidence::kFixedSize, 0);  // zeros if we could not build evidence
    if (me.key != nullptr) {
      l.my_evidence = tee::make_evidence(static_cast<std::uint32_t>(r), mine, *me.key, cert, l.theirs,
                                         l.kx->public_key());
      l.out = source.wire_bytes(l.my_evidence);
    }
  }
  swap_evidence(t, links, config, tee::Evidence::kMaxSerializedSize, failures, [&](Link& l) {
    try {
      const auto peer = tee::Evidence::deserialize(l.in);
      const tee::EvidenceCheck check{config.anchor.get(), &me.policy, l.mine,
                                     static_cast<std::uint32_t>(l.peer)};
      if (const auto verdict = tee::verify(peer, check); !verdict) {
        failures.push_back({l.peer, verdict.reason});
        return;
      }
      l.peer_identity = identity_of(peer);
      if (me.key != nullptr) l.secret = tee::derive_link_secret(*l.kx, l.my_evidence, peer);
    } catch (const IntegrityError& e) {
      failures.push_back({l.peer, e.what()});
    }
  });
}

// The same step with real evidence (comm/secure/real_evidence.h): our hardware signs the challenge that
// binds our fresh key to each neighbour's nonce; theirs is checked by check_real_message, and the link
// secret covers both messages in rank order. A rank whose hardware cannot answer reports it once and
// sends a message that no peer accepts.
void exchange_real_evidence(Transport& t, std::vector<Link>& links, const AttestConfig& config,
                            std::vector<Failure>& failures) {
  const RealAttestation& real = *config.real;
  const auto r = static_cast<std::uint32_t>(t.rank());
  bool gathered = true;
  for (auto& l : links) {
    l.kx.emplace(tee::X25519KeyPair::generate());
    l.out.assign(RealEvidenceMessage::kFixedSize, 0);  // zeros if our hardware could not answer
    RealEvidenceMessage m{
        .kind = real.kind, .rank = r, .answers = l.theirs, .kx_public = l.kx->public_key(), .evidence = {}};
    try {
      if (gathered) {
        m.evidence = real.prover->gather(real.kind, tee::kx_challenge(l.theirs, r, m.kx_public));
        l.out = m.serialize();
      }
    } catch (const std::exception& e) {
      failures.push_back({t.rank(), e.what()});
      gathered = false;
    }
  }
  swap_evidence(t, links, config, RealEvidenceMessage::kMaxSerializedSize, failures, [&](Link& l) {
    const RealLinkCheck check{.kind = real.kind,
                              .me = r,
                              .peer = static_cast<std::uint32_t>(l.peer),
                              .mine = l.mine,
                              .own_message = l.out,
                              .verifier = real.verifier.get()};
    std::optional<RealEvidenceMessage> peer;
    const RealVerdict v = check_real_message(l.in, check, peer);
    if (!v) {
      failures.push_back({l.peer, v.reason});
      return;
    }
    l.peer_measurements = v.measurements;
    if (gathered) {
      const bool mine_first = t.rank() < l.peer;
      l.secret = tee::derive_link_secret(*l.kx, peer->kx_public, mine_first ? l.out : l.in,
                                         mine_first ? l.in : l.out);
    }
  });
}

// Proof of the link key, one per direction (tee::key_confirmation): directional, so a reflected
// confirmation does not pass. No key: zeros, which never confirm.
tee::Sha256Digest confirmation(const tee::LinkSecret& secret, int from, int to) {
  return tee::key_confirmation(secret, static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to));
}

// Every link, the closing one (P-1 -> 0) included, proves before any training traffic that both ends
// derived the same secret. A mismatch is reported only by a rank that accepted the peer's evidence
// (otherwise the evidence failure already names the cause).
void confirm_keys(Transport& t, std::vector<Link>& links, const AttestConfig& config,
                  std::vector<Failure>& failures) {
  const int r = t.rank();
  std::vector<tee::Sha256Digest> out(links.size());
  std::vector<Request> reqs;
  for (auto& l : links)
    reqs.push_back(t.irecv(l.peer, std::as_writable_bytes(std::span(l.confirm_in)), tags::kKeyConfirm));
  for (std::size_t i = 0; i < links.size(); ++i) {
    out[i] = confirmation(links[i].secret, r, links[i].peer);
    reqs.push_back(t.isend(links[i].peer, std::as_bytes(std::span(out[i])), tags::kKeyConfirm));
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto got = wait_for(t, reqs[i], &config, failures, reqs[i].peer());
    if (i >= links.size() || !got || links[i].secret.empty()) continue;
    const Link& l = links[i];
    if (got != l.confirm_in.size() || !tee::equal_ct(l.confirm_in, confirmation(l.secret, l.peer, r)))
      failures.push_back({l.peer,
                          "key confirmation failed: the two ends of the link derived different keys "
                          "(evidence altered in transit?)"});
  }
}

}  // namespace

namespace {

// This rank's part before any message: its measurement, policy and signing key, and a check of its
// own certificate by its own anchor (a rank must not offer an identity it would refuse in a peer).
// Failures are collected, not thrown: the rank still takes part, so the others learn why instead of
// timing out.
// `me` stays where it is: its key may point into its own `fresh`.
void prepare(const AttestConfig& config, const EvidenceSource& source, SessionKeys& keys, LocalParty& me,
             tee::Measurements& mine, Status& status) {
  try {
    mine = source.measurements(config);
    keys.measurement = mine.combined();
    me.policy = effective_policy(config, mine);
    if (keys.world_size > 1) {  // one rank has nobody to prove itself to
      me.key = &signing_key(config, me.fresh);
      keys.device_public_key = me.key->public_key();
      // Identities are compared only when certified: under --attestation none each rank's key is made
      // up for the run and nothing vouches for what a rank reports (Note [one identity per rank]).
      if (config.anchor && config.identity)
        status.identities.push_back(
            own_identity(keys.rank, keys.device_public_key, &config.identity->certificate));
    }
    if (config.anchor && config.identity) {
      // The same words a peer reports, so the refusal names one reason with both reporters.
      if (const auto own = config.anchor->verify(config.identity->certificate); !own)
        status.failures.push_back({keys.rank, own.reason});
    }
  } catch (const std::exception& e) {
    status.failures.push_back({keys.rank, e.what()});
  }
  status.measurement = keys.measurement;
}

}  // namespace

tee::Measurements MeasuredEvidence::measurements(const AttestConfig& config) const {
  return expected_measurement(config);
}

std::vector<std::uint8_t> MeasuredEvidence::wire_bytes(const tee::Evidence& evidence) const {
  return evidence.serialize();
}

SessionKeys establish_keys(Transport& t, const AttestConfig& config) {
  return establish_keys(t, config, MeasuredEvidence{});
}

SessionKeys establish_keys(Transport& t, const AttestConfig& config, const EvidenceSource& source) {
  SessionKeys keys;
  keys.rank = t.rank();
  keys.world_size = t.size();
  keys.attestation = config.mode;
  Status status;
  tee::Measurements mine;
  LocalParty me;
  prepare(config, source, keys, me, mine, status);
  std::vector<Link> links = ring_links(keys.rank, keys.world_size);
  exchange_challenges(t, links, config, status.failures);
  if (config.real)
    exchange_real_evidence(t, links, config, status.failures);
  else
    exchange_evidence(t, links, me, config, source, mine, status.failures);
  confirm_keys(t, links, config, status.failures);
  if (config.anchor)
    for (const Link& l : links) status.identities.push_back(l.peer_identity);

  // Everyone refuses together, or nobody does.
  refuse_on_every_rank(t, status, "attestation");
  for (const Link& l : links)
    if (!l.peer_measurements.empty()) keys.verified_peers.push_back({l.peer, l.peer_measurements});
  if (!links.empty()) {
    keys.link_next = std::move(links.front().secret);
    keys.link_prev = links.size() > 1 ? std::move(links[1].secret) : keys.link_next.clone();
  }

  // The group key, from rank 0 around the ring.
  const tee::GroupSecret group = keys.rank == 0 ? tee::GroupSecret::random(32) : tee::GroupSecret();
  keys.group = release_key(t, keys, keys.rank == 0 ? &group : nullptr, 32, "group key");
  return keys;
}

tee::SecretBytes release_secret(Transport& t, SessionKeys& keys, const tee::SecretBytes* secret,
                                std::size_t size, std::string_view label) {
  const int r = t.rank();
  const int p = t.size();
  if (r == 0 && (secret == nullptr || secret->size() != size))
    throw RunError("release_secret: rank 0 must pass the " + std::to_string(size) + "-byte secret");
  if (p == 1) return secret->clone();
  const int prev = (r + p - 1) % p;
  const int next = (r + 1) % p;
  const std::uint64_t seq = keys.releases++;
  // One key per (link, release), so one message per key: each end's stream starts afresh at its first
  // position, and the AAD binds the same fields + size.
  auto link_key = [&](const tee::LinkSecret& link, int s, int d) {
    return tee::derive_release_key(link, static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(d), seq,
                                   label);
  };
  auto aad = [&](int s, int d) {
    auto a = tee::release_info(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(d), seq, label);
    a.resize(a.size() + 8);
    tee::store_be64(a.data() + a.size() - 8, size);
    return a;
  };

  std::vector<Failure> failures;
  tee::SecretBytes out(size);
  if (r == 0) {
    out = secret->clone();
  } else {
    std::vector<std::uint8_t> wire(size + tee::kTagSize);
    Request req = t.irecv(prev, std::as_writable_bytes(std::span(wire)), tags::kKeyRelease);
    const auto got = wait_for(t, req, nullptr, failures, r);
    // The first (and only) message of prev's stream under this release's key.
    tee::OpeningStream from_prev(tee::Cipher::Aes256Gcm, link_key(keys.link_prev, prev, r).view(),
                                 static_cast<std::uint32_t>(prev));
    if (got && *got != wire.size()) {  // (a longer one was refused unread, and is reported already)
      failures.push_back({r, std::string(label) + " from rank " + std::to_string(prev) + " arrived short"});
    } else if (got && !from_prev.try_open(aad(prev, r), wire, out.mutable_view())) {
      failures.push_back({r, std::string(label) + " from rank " + std::to_string(prev) +
                                 " failed to open (tag mismatch: tampered or wrong key)"});
    }
  }
  if (r + 1 < p) {
    std::vector<std::uint8_t> wire(size + tee::kTagSize);
    tee::SealingStream to_next(tee::Cipher::Aes256Gcm, link_key(keys.link_next, r, next).view(),
                               static_cast<std::uint32_t>(r));
    to_next.seal(aad(r, next), out.view(), wire);
    Request req = t.isend(next, std::as_bytes(std::span(wire)), tags::kKeyRelease);
    t.wait(req);
  }
  refuse_on_every_rank(t, Status{keys.measurement, {}, std::move(failures)},
                       "release of " + std::string(label));
  return out;
}

std::unique_ptr<SealedChannel> make_sealed_channel(const SessionKeys& keys, SealedChannelOptions options,
                                                   Profiler* profiler) {
  options.rank = keys.rank;
  options.world_size = keys.world_size;
  if (std::all_of(options.run_id.begin(), options.run_id.end(), [](std::uint8_t b) { return b == 0; }))
    options.run_id = keys.run_id();
  return std::make_unique<SealedChannel>(options, keys.channel_keys(), profiler);
}

}  // namespace tt::comm
