#include "comm/adversary/adversary_relay.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>

#include "base/error.h"
#include "comm/adversary/adversary_gcm.h"
#include "comm/secure/secure_session.h"
#include "tee/bytes.h"
#include "tee/crypto/stream_position.h"
#include "tee/identity/traffic_keys.h"
#include "tee/identity/vendor.h"

namespace tt::comm {

namespace {

// The handshake's derivations (tee/identity/traffic_keys.h) are the relay's too: it must speak the protocol.
constexpr std::array<const char*, 3> kReleases = {"group key", "dataset key", "checkpoint key"};

tee::ByteView u8(std::span<const std::byte> d) {
  return {reinterpret_cast<const std::uint8_t*>(d.data()), d.size()};
}

std::vector<std::byte> bytes_of(std::span<const std::uint8_t> d) {
  std::vector<std::byte> out(d.size());
  if (!d.empty()) std::memcpy(out.data(), d.data(), d.size());
  return out;
}

// A sealed ring message's associated data (comm/secure/sealed_channel.h: 75 bytes) with what the relay knows
// filled in, and the bits it does not know: the low bits of step (32), bucket (24), phase (3), hop
// (8), chunk, segment and origin (16 each) — 115 unknowns for 128 equations.
std::vector<std::uint8_t> aad_template(const std::array<std::uint8_t, 16>& run_id, std::uint32_t epoch,
                                       int sender, int receiver, std::uint64_t length) {
  std::vector<std::uint8_t> a(75, 0);
  std::memcpy(a.data(), "TTM1", 4);
  std::memcpy(a.data() + 4, run_id.data(), run_id.size());
  tee::store_be64(a.data() + 20, epoch);
  tee::store_be32(a.data() + 57, static_cast<std::uint32_t>(sender));
  tee::store_be32(a.data() + 61, static_cast<std::uint32_t>(receiver));
  tee::store_be64(a.data() + 65, length);
  a[73] = static_cast<std::uint8_t>(tee::Cipher::Aes256Gcm);
  a[74] = 1;  // stream kind: ring link
  return a;
}

std::vector<std::size_t> aad_unknown_bits() {
  std::vector<std::size_t> bits;
  auto field = [&](std::size_t first_byte, std::size_t last_byte, std::size_t low_bits) {
    const std::size_t end = 8 * (last_byte + 1);
    for (std::size_t b = end - low_bits; b < end && b >= 8 * first_byte; ++b) bits.push_back(b);
  };
  field(28, 35, 32);  // step
  field(36, 39, 24);  // bucket
  field(40, 40, 3);   // phase
  field(41, 44, 8);   // hop
  field(45, 48, 16);  // chunk
  field(49, 52, 16);  // segment
  field(53, 56, 16);  // origin
  return bits;
}

}  // namespace

tee::DeviceIdentity relay_device_identity(int rank) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("teetrain-relay-" + std::to_string(::getpid()) + "-" + std::to_string(rank));
  tee::provision({dir, 1, {}});
  tee::DeviceIdentity id = tee::DeviceIdentity::load_pem(tee::device_identity_path(dir, 0));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return id;
}

// What the relay holds toward one of the two ranks.
struct Relay::Side {
  std::optional<tee::Evidence> genuine;  // the evidence this rank sent to the other
  std::optional<tee::X25519KeyPair> kx;  // the relay's key-exchange key toward this rank
  std::optional<tee::Evidence> forged;   // the evidence the relay gave this rank instead
  tee::LinkSecret secret;                // the link secret this rank agreed — with the relay
  std::optional<tee::KeyRatchet> send;   // this rank's ring-link stream to the other
  std::optional<tee::KeyRatchet> recv;   // the other's ring-link stream to this rank
  // The positions the relay has sealed at on `recv` in its current epoch: under that key the relay is
  // the only sealer, so it owns the stream's one counter (Note [A counter is never duplicated]).
  std::optional<tee::MessageCounter> resealed;
  std::uint64_t resealed_epoch = 0;
};

Relay::Relay(int a, int world, Say say) : a_(a), b_((a + 1) % world), world_(world), say_(std::move(say)) {
  sides_.push_back(std::make_unique<Side>());
  sides_.push_back(std::make_unique<Side>());
}

Relay::~Relay() = default;

Relay::Side& Relay::side(int rank) {
  return *sides_[rank == a_ ? 0 : 1];
}

bool Relay::both_evidences() const {
  return sides_[0]->genuine && sides_[0]->forged && sides_[1]->genuine && sides_[1]->forged;
}

std::optional<std::vector<std::byte>> Relay::relay(int from, int to, int tag,
                                                   std::span<const std::byte> data) {
  try {
    if (tag == tags::kAttestEvidence) return forge_evidence(from, to, data);
    if (tag == tags::kKeyConfirm) return both_evidences() ? std::optional(confirm(from, to)) : std::nullopt;
    if (tag == tags::kKeyRelease) return release(from, to, data);
    if (tag >= tags::kAttestFirst && tag <= tags::kAttestLast) return std::nullopt;
    return reseal(from, to, tag, data);
  } catch (const IntegrityError&) {
    return std::nullopt;  // not what the relay expected (malformed evidence): let it pass
  }
}

// Rank `to` gets evidence claiming to be `from`'s: `from`'s rank and measurements, the nonce `to` sent
// (the genuine evidence answers it), the relay's key-exchange key, and a signature the relay can make.
std::vector<std::byte> Relay::forge_evidence(int from, int to, std::span<const std::byte> data) {
  const tee::Evidence genuine = tee::Evidence::deserialize(u8(data));
  side(from).genuine = genuine;
  Side& t = side(to);
  t.kx.emplace(tee::X25519KeyPair::generate());
  std::string how;
  if (genuine.certificate.empty()) {
    const auto key = tee::Ed25519KeyPair::generate();
    t.forged = tee::make_evidence(genuine.rank, genuine.measurement, key, {}, genuine.verifier_nonce,
                                  t.kx->public_key());
    how = "signed with a key it made up (nothing is attested: any key is as good as another)";
  } else {
    const tee::DeviceIdentity own = relay_device_identity(to);
    t.forged = tee::make_evidence(genuine.rank, genuine.measurement, own.key, own.certificate.der(),
                                  genuine.verifier_nonce, t.kx->public_key());
    how = "signed by a device of the relay's own vendor root";
  }
  say_("relay: answered rank " + std::to_string(to) + "'s challenge itself, posing as rank " +
       std::to_string(from) + ": its own key-exchange key, " + how);
  if (both_evidences()) {
    for (auto& s : sides_) s->secret = tee::derive_link_secret(*s->kx, *s->forged, *s->genuine);
  }
  return bytes_of(t.forged->serialize());
}

// What `to` expects to hear from `from`: the proof of the key `to` agreed (with the relay).
std::vector<std::byte> Relay::confirm(int from, int to) {
  const tee::Sha256Digest k = tee::key_confirmation(side(to).secret, static_cast<std::uint32_t>(from),
                                                    static_cast<std::uint32_t>(to));
  if (from == b_) {
    say_("relay: holds one link key with rank " + std::to_string(a_) + " and another with rank " +
         std::to_string(b_) + ", and sends each the key confirmation it expects");
  }
  return bytes_of(k);
}

// A key rank 0 releases over the link: opened under the sender's secret, sealed again under the
// receiver's (label and sequence number as release_secret derives them).
std::optional<std::vector<std::byte>> Relay::release(int from, int to, std::span<const std::byte> data) {
  const std::uint64_t seq = releases_++;
  if (data.size() < tee::kTagSize || side(from).secret.empty() || side(to).secret.empty())
    return std::nullopt;
  const std::size_t size = data.size() - tee::kTagSize;
  const auto origin = static_cast<std::uint32_t>(from);
  const auto receiver = static_cast<std::uint32_t>(to);
  for (const char* label : kReleases) {
    auto aad = tee::release_info(origin, receiver, seq, label);
    aad.resize(aad.size() + 8);
    tee::store_be64(aad.data() + aad.size() - 8, size);
    // The release's one message, the first of `from`'s stream under each side's release key.
    tee::OpeningStream in(tee::Cipher::Aes256Gcm,
                          tee::derive_release_key(side(from).secret, origin, receiver, seq, label).view(),
                          origin);
    tee::SecretBytes secret(size);
    if (!in.try_open(aad, u8(data), secret.mutable_view())) continue;
    tee::SealingStream out(tee::Cipher::Aes256Gcm,
                           tee::derive_release_key(side(to).secret, origin, receiver, seq, label).view(),
                           origin);
    std::vector<std::uint8_t> wire(data.size());
    out.seal(aad, secret.view(), wire);
    if (std::string_view(label) == "group key") {
      run_id_ = tee::derive_run_id(tee::GroupSecret(secret.clone()));
      have_run_id_ = true;
    }
    keys_read_.push_back(std::string(label) + " (fingerprint " + secret.fingerprint() + ")");
    say_("relay: opened the " + std::string(label) + " rank " + std::to_string(from) + " released to rank " +
         std::to_string(to) + " (fingerprint " + secret.fingerprint() + ") and sealed it again for rank " +
         std::to_string(to));
    return bytes_of(wire);
  }
  return std::nullopt;
}

// A sealed message on the ring link from -> to: under the sender's traffic key (epoch and counter from
// its clear header), solve its associated data, open it, seal it again under the receiver's key.
std::optional<std::vector<std::byte>> Relay::reseal(int from, int to, int tag,
                                                    std::span<const std::byte> data) {
  constexpr std::size_t kOverhead = tee::kTagSize + 12;
  if (!have_run_id_ || to != (from + 1) % world_ || data.size() < kOverhead) return std::nullopt;
  Side& f = side(from);
  Side& t = side(to);
  if (f.secret.empty() || t.secret.empty()) return std::nullopt;
  const auto origin = static_cast<std::uint32_t>(from);
  // The link stream from -> to, as each end derived it: `from` under the secret it agreed with the
  // relay, `to` under its own.
  auto stream = [&](const tee::LinkSecret& secret) {
    return tee::KeyRatchet(tee::derive_link_stream_secret(secret, origin, static_cast<std::uint32_t>(to)),
                           tee::Cipher::Aes256Gcm);
  };
  if (!f.send) f.send.emplace(stream(f.secret));
  if (!t.recv) t.recv.emplace(stream(t.secret));
  const std::size_t len = data.size() - kOverhead;
  const tee::ByteView wire = u8(data);
  const std::uint32_t epoch = tee::load_be32(wire.data() + len + tee::kTagSize);
  const std::uint64_t counter = tee::load_be64(wire.data() + len + tee::kTagSize + 4);
  if (counter == std::numeric_limits<std::uint64_t>::max()) return std::nullopt;  // no stream gets that far
  for (auto* r : {&*f.send, &*t.recv}) {
    for (int i = 0; i < 64 && r->epoch() < epoch; ++i) r->advance();
    if (r->epoch() != epoch) return std::nullopt;
  }
  if (!t.resealed || t.resealed_epoch != epoch) {  // a new epoch's key: its stream starts afresh
    t.resealed.emplace(origin);
    t.resealed_epoch = epoch;
  }
  if (counter < t.resealed->next_counter()) return std::nullopt;  // a replay: it passes as it is
  tee::Tag tag_in{};
  std::memcpy(tag_in.data(), wire.data() + len, tee::kTagSize);
  // Opening at the position the clear header names: a counter made only to name it, as opening under
  // a key repeats no nonce (the sender sealed there); sealing again takes the relay's own counter.
  const auto opened = gcm::solve_and_open(
      f.send->key().secret(), tee::MessageCounter(origin).skip_to(counter), wire.first(len), tag_in,
      aad_template(run_id_, epoch, from, to, len), aad_unknown_bits());
  if (!opened) return std::nullopt;  // not on the link stream (a group message), or not sealed at all
  std::vector<std::uint8_t> out(wire.begin(), wire.end());
  tee::Tag tag_out{};
  tee::Aead(tee::Cipher::Aes256Gcm, t.recv->key().view())
      .seal(t.resealed->skip_to(counter), opened->aad, opened->plain, std::span(out).first(len), tag_out);
  std::memcpy(out.data() + len, tag_out.data(), tee::kTagSize);
  ++resealed_;
  bytes_read_ += len;
  note_plaintext(from, to, tag, opened->plain);
  return bytes_of(out);
}

void Relay::note_plaintext(int from, int to, int tag, std::span<const std::uint8_t> plain) {
  if (printed_gradient_ || tag != tags::kRing || plain.size() < 4 * sizeof(float)) return;
  printed_gradient_ = true;
  std::string values;
  for (std::size_t i = 0; i < 4; ++i) {
    float v = 0;
    std::memcpy(&v, plain.data() + i * sizeof v, sizeof v);
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.6g", static_cast<double>(v));
    values += buf;
  }
  say_("relay: read a gradient message on link " + std::to_string(from) + " -> " + std::to_string(to) +
       " in clear (" + std::to_string(plain.size()) + " bytes), first values" + values +
       ", and sealed it again for rank " + std::to_string(to));
}

std::string Relay::summary() const {
  std::string keys;
  for (const auto& k : keys_read_) keys += (keys.empty() ? "" : ", ") + k;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(bytes_read_) / (1 << 20));
  return "relay between rank " + std::to_string(a_) + " and rank " + std::to_string(b_) + ": read " +
         (keys.empty() ? std::string("no released key") : keys) + "; opened, read and re-sealed " +
         std::to_string(resealed_) + " ring-link messages (" + mib + " MiB of plaintext)";
}

}  // namespace tt::comm
