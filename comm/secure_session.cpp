#include "comm/secure_session.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "comm/collectives.h"
#include "tee/aead.h"
#include "tee/bytes.h"
#include "tee/hkdf.h"

namespace tt::comm {

namespace {

// The status every rank contributes after a handshake round: its measurement, then its failures as
// text lines "subject|reason" (subject = the rank found at fault), NUL-padded.
constexpr std::size_t kStatusBytes = 1024;
constexpr std::size_t kMeasurementBytes = 32;

struct Failure {
  int subject = 0;
  std::string reason;
};

std::vector<std::uint8_t> label_info(std::string_view prefix, int a, int b, std::string_view suffix = {}) {
  std::vector<std::uint8_t> info(prefix.begin(), prefix.end());
  info.resize(prefix.size() + 8);
  tee::store_be32(info.data() + prefix.size(), static_cast<std::uint32_t>(a));
  tee::store_be32(info.data() + prefix.size() + 4, static_cast<std::uint32_t>(b));
  info.insert(info.end(), suffix.begin(), suffix.end());
  return info;
}

std::vector<std::byte> encode_status(const tee::Sha256Digest& m, const std::vector<Failure>& failures) {
  std::vector<std::byte> blob(kStatusBytes);
  std::transform(m.begin(), m.end(), blob.begin(), [](std::uint8_t b) { return std::byte{b}; });
  std::string text;
  for (const auto& f : failures) text += std::to_string(f.subject) + "|" + f.reason + "\n";
  text.resize(std::min(text.size(), kStatusBytes - kMeasurementBytes));
  std::transform(text.begin(), text.end(), blob.begin() + kMeasurementBytes,
                 [](char c) { return static_cast<std::byte>(c); });
  return blob;
}

// Allgathers every rank's status (in clear: there may be no key yet, and it holds nothing secret) and
// throws the same AttestationError on every rank if any rank reported a failure.
//
// Who is to blame is not always clear: a rank with the wrong configuration rejects its honest
// neighbours just as they reject it. Reports are therefore trusted from ranks that hold the
// measurement most ranks hold (ties: the lowest rank's), plus what each rank says about itself.
void refuse_on_every_rank(Transport& t, const tee::Sha256Digest& mine, const std::vector<Failure>& failures,
                          const std::string& what) {
  const auto all = Collectives(t).allgather(encode_status(mine, failures));
  const int p = t.size();
  auto block = [&](int r) {
    return std::span<const std::byte>(all).subspan(static_cast<std::size_t>(r) * kStatusBytes, kStatusBytes);
  };
  std::vector<int> holders(static_cast<std::size_t>(p), 0);  // ranks sharing rank r's measurement
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      const auto ma = block(a).first(kMeasurementBytes);
      const auto mb = block(b).first(kMeasurementBytes);
      if (std::equal(ma.begin(), ma.end(), mb.begin())) ++holders[static_cast<std::size_t>(a)];
    }
  }
  const int reference = static_cast<int>(std::max_element(holders.begin(), holders.end()) - holders.begin());
  const auto ref = block(reference).first(kMeasurementBytes);

  // (subject, reason) -> reporters, kept in first-seen order of subjects.
  std::map<std::pair<int, std::string>, std::vector<int>> reports;
  std::size_t total = 0;
  for (int reporter = 0; reporter < p; ++reporter) {
    const auto text_bytes = block(reporter).subspan(kMeasurementBytes);
    std::string text;
    for (std::byte b : text_bytes) {
      if (b == std::byte{0}) break;
      text.push_back(static_cast<char>(b));
    }
    const auto m = block(reporter).first(kMeasurementBytes);
    const bool trusted = std::equal(m.begin(), m.end(), ref.begin());
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const auto bar = line.find('|');
      if (bar == std::string::npos) continue;
      const int subject = std::atoi(line.substr(0, bar).c_str());
      ++total;
      if (trusted || subject == reporter) reports[{subject, line.substr(bar + 1)}].push_back(reporter);
    }
  }
  if (total == 0) return;
  std::string msg = what + " refused on every rank:";
  for (const auto& [key, reporters] : reports) {
    msg += " rank " + std::to_string(key.first) + ": " + key.second + " (reported by rank" +
           (reporters.size() > 1 ? "s" : "");
    for (std::size_t i = 0; i < reporters.size(); ++i) msg += (i ? ", " : " ") + std::to_string(reporters[i]);
    msg += ");";
  }
  if (reports.empty()) msg += " reports only from ranks whose own measurement differs from the majority;";
  msg.pop_back();
  throw AttestationError(msg);
}

std::size_t wait_for(Transport& t, Request& r, const AttestConfig* cfg) {
  return cfg != nullptr && cfg->timeout.count() > 0 ? t.wait(r, cfg->timeout) : t.wait(r);
}

tee::SecretBytes expand(const tee::SecretBytes& secret, const std::vector<std::uint8_t>& info,
                        std::size_t n) {
  return tee::hkdf_expand(secret.view(), info, n);
}

}  // namespace

ChannelKeys SessionKeys::channel_keys() const {
  ChannelKeys k;
  if (world_size > 1) {
    const int next = (rank + 1) % world_size;
    const int prev = (rank + world_size - 1) % world_size;
    // Directional: with P = 2 both links share one secret, but each direction gets its own key.
    k.send = expand(link_next, label_info("teetrain traffic v1", rank, next), 32);
    k.recv = expand(link_prev, label_info("teetrain traffic v1", prev, rank), 32);
  }
  if (!group.empty()) k.group = expand(group, label_info("teetrain group traffic v1", 0, 0), 32);
  return k;
}

std::array<std::uint8_t, 16> SessionKeys::run_id() const {
  std::array<std::uint8_t, 16> id{};
  if (group.empty()) return id;
  const auto derived = expand(group, label_info("teetrain run id v1", 0, 0), id.size());
  std::copy(derived.data(), derived.data() + id.size(), id.begin());
  return id;
}

tee::SecretBytes SessionKeys::derive_local_key(std::string_view label) const {
  if (group.empty()) throw RunError("derive_local_key: no group secret (run establish_keys first)");
  return expand(group, label_info("teetrain local v1", rank, 0, label), 32);
}

std::string SessionKeys::describe() const {
  auto fp = [](const tee::SecretBytes& s) { return s.empty() ? std::string("none") : s.fingerprint(); };
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
  bool nonce_ok = false;
  std::optional<tee::X25519KeyPair> kx;
  tee::Evidence my_evidence;
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> in;
  tee::SecretBytes secret;
  tee::Sha256Digest confirm_in{};
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

void exchange_nonces(Transport& t, std::vector<Link>& links, const AttestConfig& config) {
  std::vector<Request> reqs;
  for (auto& l : links)
    reqs.push_back(t.irecv(l.peer, std::as_writable_bytes(std::span(l.theirs)), tags::kAttestNonce));
  for (auto& l : links) {
    l.mine = tee::make_verifier_nonce();
    reqs.push_back(t.isend(l.peer, std::as_bytes(std::span(l.mine)), tags::kAttestNonce));
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const std::size_t got = wait_for(t, reqs[i], &config);
    if (i < links.size()) links[i].nonce_ok = got == sizeof(tee::VerifierNonce);
  }
}

// Our evidence answers each neighbour's nonce; theirs is verified against our anchor, policy and
// nonce, and only then is a link secret derived from the transcript of both evidences.
void exchange_evidence(Transport& t, std::vector<Link>& links, const LocalParty& me,
                       const AttestConfig& config, const tee::Measurements& mine,
                       std::vector<Failure>& failures) {
  const int r = t.rank();
  const std::vector<std::uint8_t> cert =
      config.identity ? config.identity->certificate.der() : std::vector<std::uint8_t>{};
  std::vector<Request> reqs;
  for (auto& l : links) {
    l.kx.emplace(tee::X25519KeyPair::generate());
    l.out.assign(tee::Evidence::kFixedSize, 0);  // zeros if we could not build evidence
    if (me.key != nullptr) {
      l.my_evidence = tee::make_evidence(static_cast<std::uint32_t>(r), mine, *me.key, cert, l.theirs,
                                         l.kx->public_key());
      l.out = l.my_evidence.serialize();
    }
    if (config.corrupt_evidence) l.out.back() ^= 0x01;  // last signature byte
    l.in.assign(tee::Evidence::kMaxSerializedSize, 0);
    reqs.push_back(t.irecv(l.peer, std::as_writable_bytes(std::span(l.in)), tags::kAttestEvidence));
  }
  for (auto& l : links)
    reqs.push_back(t.isend(l.peer, std::as_bytes(std::span(l.out)), tags::kAttestEvidence));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const std::size_t got = wait_for(t, reqs[i], &config);
    if (i >= links.size()) continue;
    Link& l = links[i];
    l.in.resize(got);
    if (!l.nonce_ok) {
      failures.push_back({l.peer, "malformed handshake message"});
      continue;
    }
    try {
      const auto peer = tee::Evidence::deserialize(l.in);
      const tee::EvidenceCheck check{config.anchor.get(), &me.policy, l.mine,
                                     static_cast<std::uint32_t>(l.peer)};
      if (const auto verdict = tee::verify(peer, check); !verdict) {
        failures.push_back({l.peer, verdict.reason});
      } else if (me.key != nullptr) {
        l.secret = tee::derive_session_secret(*l.kx, l.my_evidence, peer, "teetrain link v1");
      }
    } catch (const IntegrityError& e) {
      failures.push_back({l.peer, e.what()});
    }
  }
}

// Proof of the link key, one per direction: HKDF-Expand(link secret, "teetrain key confirm v1" ||
// sender || receiver). Directional, so a reflected confirmation does not pass.
tee::Sha256Digest confirmation(const tee::SecretBytes& secret, int from, int to) {
  tee::Sha256Digest d{};
  if (secret.empty()) return d;  // no key: send zeros, which never confirm
  const auto k = expand(secret, label_info("teetrain key confirm v1", from, to), d.size());
  std::copy(k.data(), k.data() + d.size(), d.begin());
  return d;
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
    const std::size_t got = wait_for(t, reqs[i], &config);
    if (i >= links.size() || links[i].secret.empty()) continue;
    const Link& l = links[i];
    if (got != l.confirm_in.size() || !tee::equal_ct(l.confirm_in, confirmation(l.secret, l.peer, r)))
      failures.push_back({l.peer,
                          "key confirmation failed: the two ends of the link derived different keys "
                          "(evidence altered in transit?)"});
  }
}

}  // namespace

SessionKeys establish_keys(Transport& t, const AttestConfig& config) {
  SessionKeys keys;
  keys.rank = t.rank();
  keys.world_size = t.size();
  keys.attestation = config.mode;
  std::vector<Failure> failures;
  LocalParty me;
  tee::Measurements mine;
  try {
    mine = expected_measurement(config);
    keys.measurement = mine.combined();
    me.policy = effective_policy(config, mine);
    if (keys.world_size > 1) {  // one rank has nobody to prove itself to
      me.key = &signing_key(config, me.fresh);
      keys.device_public_key = me.key->public_key();
    }
  } catch (const std::exception& e) {
    failures.push_back(
        {keys.rank, e.what()});  // still take part, so the others learn why instead of timing out
  }
  std::vector<Link> links = ring_links(keys.rank, keys.world_size);
  exchange_nonces(t, links, config);
  exchange_evidence(t, links, me, config, mine, failures);
  confirm_keys(t, links, config, failures);

  // Everyone refuses together, or nobody does.
  refuse_on_every_rank(t, keys.measurement, failures, "attestation");
  if (!links.empty()) {
    keys.link_next = std::move(links.front().secret);
    keys.link_prev = links.size() > 1 ? std::move(links[1].secret) : keys.link_next.clone();
  }

  // The group key, from rank 0 around the ring.
  const tee::SecretBytes group = keys.rank == 0 ? tee::SecretBytes::random(32) : tee::SecretBytes();
  keys.group = release_secret(t, keys, keys.rank == 0 ? &group : nullptr, 32, "group key");
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
  std::string suffix(8, '\0');
  tee::store_be64(reinterpret_cast<std::uint8_t*>(suffix.data()), seq);
  suffix += label;
  // One key per (link, release): the nonce can stay fixed, and the AAD binds the same fields + size.
  auto link_key = [&](const tee::SecretBytes& link, int s, int d) {
    return expand(link, label_info("teetrain release v1", s, d, suffix), 32);
  };
  auto aad = [&](int s, int d) {
    auto a = label_info("teetrain release v1", s, d, suffix);
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
    const std::size_t got = t.wait(req);
    tee::Aead aead(tee::Cipher::Aes256Gcm, link_key(keys.link_prev, prev, r).view());
    if (got != wire.size()) {
      failures.push_back({r, std::string(label) + " from rank " + std::to_string(prev) + " arrived short"});
    } else if (!aead.try_open_with_tag(tee::Nonce::make(static_cast<std::uint32_t>(prev), 0), aad(prev, r),
                                       wire, out.mutable_view())) {
      failures.push_back({r, std::string(label) + " from rank " + std::to_string(prev) +
                                 " failed to open (tag mismatch: tampered or wrong key)"});
    }
  }
  if (r + 1 < p) {
    std::vector<std::uint8_t> wire(size + tee::kTagSize);
    tee::Aead aead(tee::Cipher::Aes256Gcm, link_key(keys.link_next, r, next).view());
    aead.seal_append_tag(tee::Nonce::make(static_cast<std::uint32_t>(r), 0), aad(r, next), out.view(), wire);
    Request req = t.isend(next, std::as_bytes(std::span(wire)), tags::kKeyRelease);
    t.wait(req);
  }
  refuse_on_every_rank(t, keys.measurement, failures, "release of " + std::string(label));
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
